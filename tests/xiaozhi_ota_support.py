"""What stock xiaozhi firmware sends to its OTA URL (xiaozhi-esp32's `Ota::SetupHttp`, the
body of `Board::GetSystemInfoJson`, `Ota::GetActivationPayload`), for the OTA tests."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

MAC = "d8:3b:da:11:22:33"
CLIENT_ID = "3f0c2a8e-5b7d-4c1e-9a2f-6d8e0b1c2a3d"
SERIAL = "SN-HOMEHUB-TEST-0000000000000001"
DEVICE_KEY = b"the key in the device's eFuse, which the hub never knows"


def headers(mac: str = MAC, client_id: str = CLIENT_ID, serial: str = "") -> dict[str, str]:
    """The request headers, in the test client's spelling."""
    found = {
        "HTTP_ACTIVATION_VERSION": "2" if serial else "1",
        "HTTP_DEVICE_ID": mac,
        "HTTP_CLIENT_ID": client_id,
        "HTTP_USER_AGENT": "bread-compact-wifi/1.6.2",
        "HTTP_ACCEPT_LANGUAGE": "en-US",
    }
    if serial:
        found["HTTP_SERIAL_NUMBER"] = serial
    return found


def system_info(mac: str = MAC, client_id: str = CLIENT_ID, version: str = "1.6.2") -> dict[str, Any]:
    return {
        "version": 2,
        "language": "en-US",
        "flash_size": 16777216,
        "minimum_free_heap_size": "7265024",
        "mac_address": mac,
        "uuid": client_id,
        "chip_model_name": "esp32s3",
        "chip_info": {"model": 9, "cores": 2, "revision": 2, "features": 18},
        "application": {
            "name": "xiaozhi",
            "version": version,
            "compile_time": "Jun  1 2026T10:00:00Z",
            "idf_version": "v5.4.1",
            "elf_sha256": "0" * 64,
        },
        "partition_table": [{"label": "ota_0", "type": 0, "subtype": 16, "address": 65536, "size": 6291456}],
        "ota": {"label": "ota_0"},
        "board": {"type": "bread-compact-wifi", "name": "bread-compact-wifi", "ssid": "home", "rssi": -52},
    }


def check_in(client, mac: str = MAC, client_id: str = CLIENT_ID, serial: str = "", **extra):
    return client.post(
        "/xiaozhi/ota/",
        json.dumps(system_info(mac, client_id)),
        content_type="application/json",
        **headers(mac, client_id, serial),
        **extra,
    )


def answer_to(challenge: str, serial: str = SERIAL) -> dict[str, str]:
    """A v2 device's activation body: its HMAC-SHA256 of the challenge with its eFuse key."""
    digest = hmac.new(DEVICE_KEY, challenge.encode(), hashlib.sha256).hexdigest()
    return {"algorithm": "hmac-sha256", "serial_number": serial, "challenge": challenge, "hmac": digest}


def activate(
    client, body: dict[str, Any] | None = None, mac: str = MAC, client_id: str = CLIENT_ID, serial=""
):
    return client.post(
        "/xiaozhi/ota/activate",
        json.dumps(body or {}),
        content_type="application/json",
        **headers(mac, client_id, serial),
    )
