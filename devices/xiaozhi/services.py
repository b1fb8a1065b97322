"""Stock xiaozhi devices joining the hub: the OTA check-in, the activation poll, pairing (the
owner types the code the device shows) and unbinding.

What stock firmware does (xiaozhi-esp32's `Ota::CheckVersion` and `Ota::Activate`): at every
boot it sends `POST <ota_url>` (GET when it has no body) with headers `Device-Id` (its MAC),
`Client-Id` (a UUID it keeps), `Activation-Version` (2 with a serial number in eFuse, else 1),
`Serial-Number` (v2), `User-Agent` (`board/version`), `Accept-Language`, and a JSON body
describing board and firmware. From the answer it reads `server_time`, `firmware` (no update
unless its version is newer), `activation`, and stores every string (and number) of the
`websocket` and `mqtt` sections in its settings, keeping those the answer leaves out; MQTT wins
when both are there. With an `activation` section it shows and speaks the code and polls
`POST <ota_url>/activate` (every 3 s on 202, 10 s after an error, 10 times) with `{}` (v1) or
`{"algorithm": "hmac-sha256", "serial_number", "challenge", "hmac"}` (v2), then checks in again.

The hub's side:

- an unknown device (no binding for its MAC and Client-Id) gets a 6-digit code, valid for
  DEVICE_ACTIVATION_CODE_SECONDS, the same one at every check-in until it expires; the codes
  waiting are bounded per address and in all, the oldest expiring first to make room;
- the owner binds it (`pair`: the dashboard's "Add a device", `manage.py pair_device CODE`),
  which registers its agent, connecting on demand, with no usable device token yet;
- its next check-ins hand it a fresh device token with the WebSocket URL: the first one after
  binding and those within TOKEN_HANDOUT_SECONDS of it until the device first connects with
  it (so that an answer lost on the way is made up for; each replaces the previous token).
  Later ones carry the URL only, which leaves the token the device stored in place: the token
  never rests in the hub in plain text, and an unauthenticated request that names the device's
  MAC and Client-Id (a replay) never gets one once the device has connected;
- `unbind` revokes the token and hangs up the device; its next check-in gets a new code.

The activation poll's HMAC answer is recorded as given: the hub cannot check it, since it does
not know the key in the device's eFuse.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from audit.models import Event
from audit.services import record_event
from common.storable import bounded_json, storable_json, storable_text
from devices.agents import services as agent_services
from devices.agents.models import Agent
from devices.xiaozhi.models import Activation
from devices.xiaozhi.mqtt_config import mqtt_section
from mcp_endpoint.engine import jsonrpc

DEVICE = Event.Interface.DEVICE
# After the first hand-out of a device token, check-ins get a fresh one for this long, until the
# device first connects.
TOKEN_HANDOUT_SECONDS = 300
# Codes that expired unused are kept this long (so that typing one says "expired", not
# "unknown"), then deleted when a new code is given.
EXPIRED_KEPT = timedelta(days=1)
MAX_SYSTEM_INFO_CHARS = 8000
DEVICE_ID = re.compile(r"[!-~]{1,64}")  # printable ASCII, no spaces: the MAC, as the WebSocket sends it
CLIENT_ID = re.compile(r"[!-~]{0,64}")
CODE = re.compile(r"\d{6}")
HEX_HMAC = re.compile(r"[0-9a-fA-F]{64}")


class OtaError(Exception):
    """A request the OTA endpoints answer with an HTTP error and `{"error": message}`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class PairingError(Exception):
    """A code that binds no device; the message says why, for the owner."""


@dataclass(frozen=True)
class CheckIn:
    """Who is asking, as the firmware's headers and body say."""

    device_id: str
    client_id: str = ""
    activation_version: str = ""
    serial_number: str = ""
    user_agent: str = ""
    language: str = ""
    body: Mapping[str, Any] | None = None
    address: str = ""  # where the request came from (`common.addresses.address_key`)

    @property
    def board(self) -> dict[str, Any]:
        board = (self.body or {}).get("board")
        if not isinstance(board, dict):
            return {}
        return {key: board[key] for key in ("type", "name") if isinstance(board.get(key), str)}

    @property
    def firmware(self) -> dict[str, Any]:
        """The application's name and version, from the body, else from `User-Agent` (`board/version`)."""
        application = (self.body or {}).get("application")
        found = {}
        if isinstance(application, dict):
            found = {k: application[k] for k in ("name", "version") if isinstance(application.get(k), str)}
        if "version" not in found and "/" in self.user_agent:
            found["version"] = self.user_agent.rsplit("/", 1)[1].strip()
        return found


def check_in_from(headers: Mapping[str, str], body: bytes, *, address: str = "") -> CheckIn:
    """A device's request, from its headers (any case) and body, sent from `address`; `OtaError`
    400 when they are not what stock firmware sends."""
    found = {key.lower(): value.strip() for key, value in headers.items()}
    device_id = found.get("device-id", "")
    if not DEVICE_ID.fullmatch(device_id):
        raise OtaError(
            400,
            "The Device-Id header (the device's MAC, 1 to 64 characters, no spaces) is missing or "
            "invalid: this is the OTA URL that stock xiaozhi devices check in at.",
        )
    client_id = found.get("client-id", "")
    if not CLIENT_ID.fullmatch(client_id):
        raise OtaError(400, "The Client-Id header must be at most 64 characters, with no spaces.")
    parsed: Any = None
    if body.strip():
        try:
            parsed = jsonrpc.loads(body)
        except ValueError:
            raise OtaError(400, "The body must be JSON.") from None
        if not isinstance(parsed, dict):
            raise OtaError(400, "The body must be a JSON object.")
    return CheckIn(
        device_id=device_id,
        client_id=client_id,
        activation_version=storable_text(found.get("activation-version", "")[:8]),
        serial_number=storable_text(found.get("serial-number", "")[:64]),
        user_agent=storable_text(found.get("user-agent", "")[:200]),
        language=storable_text(found.get("accept-language", "")[:35]),
        body=parsed,
        address=address[:64],
    )


# --- the OTA check-in ---------------------------------------------------------------------------


def check_in(device: CheckIn, *, websocket_url: str) -> dict[str, Any]:
    """The OTA answer for `device`: `server_time`, `firmware` (its own version: no update is
    offered), and either its configuration (bound) or an `activation` section (unknown)."""
    now = timezone.now()
    answer: dict[str, Any] = {"server_time": _server_time(now)}
    version = device.firmware.get("version")
    if version:
        answer["firmware"] = {"version": version, "url": ""}
    configuration = _configuration(device, websocket_url, now)
    if configuration is not None:
        answer.update(configuration)
    else:
        answer["activation"] = _activation_offer(device, now)
    return answer


def _server_time(now: datetime) -> dict[str, int]:
    """Milliseconds since the epoch, and the hub's time zone's offset in minutes (the firmware
    adds it, keeping local time on its clock)."""
    offset = timezone.localtime(now).utcoffset() or timedelta(0)
    return {"timestamp": int(now.timestamp() * 1000), "timezone_offset": int(offset.total_seconds() // 60)}


def _configuration(device: CheckIn, websocket_url: str, now: datetime) -> dict[str, Any] | None:
    """A bound device's sections (None when this device, MAC and Client-Id, is not bound)."""
    with transaction.atomic():
        binding = (
            Activation.objects.select_for_update()
            .filter(
                device_id=device.device_id,
                client_id=device.client_id,
                bound_at__isnull=False,
                unbound_at__isnull=True,
                agent__isnull=False,
            )
            .first()
        )
        agent = binding.agent if binding is not None else None
        if binding is None or agent is None:
            return None
        websocket: dict[str, Any] = {"url": websocket_url}
        handed = binding.token_handed_at
        secrets_due = handed is None or (
            now - handed < timedelta(seconds=TOKEN_HANDOUT_SECONDS) and not _connected_since(agent, handed)
        )
        if secrets_due:
            token = agent_services.issue_device_token(
                agent.agent_id, actor=device.device_id, interface=DEVICE
            )
            if token is not None:
                websocket["token"] = token
                binding.token_handed_at = handed or now
        binding.last_check_in = now
        _note_device(binding, device)
        binding.save()
        agent_services.heard_from([agent.agent_id])
    sections: dict[str, Any] = {"websocket": websocket}
    # MQTT credentials are handed out when the device token is (a check-in naming the MAC later
    # gets none); the firmware keeps the section it stored.
    mqtt = mqtt_section(agent, actor=device.device_id) if secrets_due else None
    if mqtt is not None:
        sections["mqtt"] = mqtt
    return sections


def _connected_since(agent: Agent, since: datetime) -> bool:
    """Whether the device connected with what it was handed (its WebSocket's hello, or its MQTT
    connection) since `since`: it has its token then, and no check-in needs another."""
    return Event.objects.filter(
        action="agent.connect", target=f"agent:{agent.agent_id}", at__gte=since
    ).exists()


def _note_device(row: Activation, device: CheckIn) -> None:
    """What the device said about itself at its latest check-in."""
    row.activation_version = device.activation_version
    row.serial_number = device.serial_number
    row.user_agent = device.user_agent
    row.language = device.language
    row.board = storable_json(device.board)
    row.firmware = storable_json(device.firmware)
    if device.body is not None:
        row.system_info = bounded_json(dict(device.body), MAX_SYSTEM_INFO_CHARS)


def _activation_offer(device: CheckIn, now: datetime) -> dict[str, Any]:
    """The device's live code, or a new one."""
    with transaction.atomic():
        row = (
            Activation.objects.select_for_update()
            .filter(
                device_id=device.device_id,
                client_id=device.client_id,
                bound_at__isnull=True,
                expires_at__gt=now,
            )
            .first()
        )
        if row is None:
            row = _new_activation(device, now)
        else:
            row.last_check_in = now
            _note_device(row, device)
            row.save()
    left_ms = max(0, int((row.expires_at - now).total_seconds() * 1000))
    return {
        "code": row.code,
        "message": f"HomeHub: Devices, Add a device, code {row.code}",
        "challenge": row.challenge,
        "timeout_ms": left_ms,
    }


def _new_activation(device: CheckIn, now: datetime) -> Activation:
    """A code for the device. Anyone can check in (the OTA URL is unauthenticated): the codes
    waiting are bounded from one address and in all, the oldest expiring to make room, so that
    check-ins that nobody will add cannot keep a real device from getting a code."""
    Activation.objects.filter(bound_at__isnull=True, expires_at__lt=now - EXPIRED_KEPT).delete()
    waiting = Activation.objects.filter(bound_at__isnull=True, expires_at__gt=now)
    _expire_oldest(
        waiting.filter(address=device.address), settings.DEVICE_PENDING_ACTIVATIONS_PER_ADDRESS - 1, now
    )
    _expire_oldest(waiting, settings.DEVICE_PENDING_ACTIVATIONS_MAX - 1, now)
    row = Activation(
        device_id=device.device_id,
        client_id=device.client_id,
        code=_unused_code(now),
        challenge=secrets.token_hex(16),
        expires_at=now + timedelta(seconds=settings.DEVICE_ACTIVATION_CODE_SECONDS),
        last_check_in=now,
        address=device.address,
    )
    _note_device(row, device)
    row.save()
    record_event(
        actor=device.device_id,
        interface=DEVICE,
        action="xiaozhi.activation",
        target=f"device:{device.device_id}",
        after={
            "client_id": device.client_id,
            "board": row.board,
            "firmware": row.firmware,
            "expires_at": row.expires_at.isoformat(),
        },
    )
    return row


def _expire_oldest(codes: QuerySet[Activation], keep: int, now: datetime) -> None:
    """Expire the oldest of the waiting `codes` but the `keep` newest (their devices ask for a
    new code at their next check-in)."""
    excess = codes.count() - max(0, keep)
    if excess > 0:
        oldest = list(codes.order_by("created_at", "id").values_list("pk", flat=True)[:excess])
        Activation.objects.filter(pk__in=oldest).update(expires_at=now)


def _unused_code(now: datetime) -> str:
    """Six digits that no unbound code still kept has (so a code names one device)."""
    while True:
        code = f"{secrets.randbelow(1_000_000):06d}"
        if not Activation.objects.filter(code=code, bound_at__isnull=True).exists():
            return code


# --- the activation poll ------------------------------------------------------------------------


def activate(device: CheckIn) -> tuple[int, dict[str, Any]]:
    """The answer to `POST <ota_url>/activate`: 200 once the device is bound, 202 while its code
    waits (its answer to the challenge recorded the first time it comes); `OtaError` when it
    has no live code (404 never given one, 410 expired or unbound) or its answer is a replay
    (409: another challenge than its current one, or a different answer to it)."""
    now = timezone.now()
    answer = dict(device.body or {})
    with transaction.atomic():
        row = (
            Activation.objects.select_for_update()
            .filter(device_id=device.device_id, client_id=device.client_id)
            .first()
        )
        if row is None:
            raise OtaError(404, "This device was given no activation code: check in at the OTA URL first.")
        if row.bound_at is not None:
            if row.unbound_at is not None or row.agent_id is None:
                raise OtaError(410, "This device was unbound: check in at the OTA URL for a new code.")
            return 200, {
                "status": "bound",
                "message": "Activated: check in at the OTA URL for the configuration.",
            }
        if row.expires_at <= now:
            raise OtaError(
                410, "This device's activation code expired: check in at the OTA URL for a new one."
            )
        if answer:
            _record_answer(row, answer, device, now)
    return 202, {
        "status": "pending",
        "message": f"Waiting for the owner to add this device with code {row.code}.",
    }


def _record_answer(row: Activation, answer: dict[str, Any], device: CheckIn, now: datetime) -> None:
    challenge, hmac = answer.get("challenge"), answer.get("hmac")
    if challenge != row.challenge:
        raise OtaError(
            409,
            "This challenge is not the one this device was given (an older code's, or a replay): "
            "check in at the OTA URL again.",
        )
    if answer.get("algorithm") != "hmac-sha256" or not isinstance(hmac, str) or not HEX_HMAC.fullmatch(hmac):
        raise OtaError(
            400, 'The answer must be {"algorithm": "hmac-sha256", "serial_number", "challenge", "hmac"}.'
        )
    serial = answer.get("serial_number")
    if not isinstance(serial, str) or (device.serial_number and serial != device.serial_number):
        raise OtaError(400, "The answer's serial_number must be the Serial-Number header's.")
    given = {
        "algorithm": "hmac-sha256",
        "serial_number": storable_text(serial[:64]),
        "challenge": challenge,
        "hmac": hmac.lower(),
    }
    if row.answer is not None:
        if row.answer != given:
            raise OtaError(409, "This device already answered its challenge differently.")
        return
    row.answer, row.answered_at = given, now
    row.save(update_fields=["answer", "answered_at"])
    record_event(
        actor=device.device_id,
        interface=DEVICE,
        action="xiaozhi.answer",
        target=f"device:{device.device_id}",
        after={"algorithm": "hmac-sha256", "serial_number": given["serial_number"]},
    )


# --- pairing and unbinding ----------------------------------------------------------------------


def pair(code: str, *, actor: str, interface: str, name: str = "") -> Activation:
    """Bind the device showing `code`: its agent (id: its MAC) is registered, connecting on
    demand, without a usable token until the device checks in (see the module's docstring);
    an earlier binding of the same MAC (a reset device, with a new Client-Id) ends. Raises
    `PairingError` for a code that is malformed, unknown, expired or already used."""
    code = "".join(code.split())
    if not CODE.fullmatch(code):
        raise PairingError("An activation code is the 6 digits the device shows and says.")
    now = timezone.now()
    with transaction.atomic():
        row = Activation.objects.select_for_update().filter(code=code).first()
        if row is None:
            raise PairingError(f"No device is showing code {code}: check the code on the device's screen.")
        if row.bound_at is not None:
            raise PairingError(
                f"Code {code} was already used: device {row.device_id} was added with it on "
                f"{timezone.localtime(row.bound_at):%Y-%m-%d %H:%M}."
            )
        if row.expires_at <= now:
            raise PairingError(
                f"Code {code} has expired. The device asks for a new one by itself within a few "
                "minutes (or restart it): type the new code."
            )
        ended = _end_bindings(row.device_id, actor=actor, now=now)
        if ended:  # the old token stops working, and a live connection with it is hung up
            agent_services.revoke_device_token(row.device_id, actor=actor, interface=interface)
        known = Agent.objects.filter(agent_id=row.device_id).exists()
        label = name.strip()[:100] or ("" if known else _label(row))
        try:
            agent, _ = agent_services.register_agent(
                row.device_id,
                transport=Agent.Transport.WS,
                name=label,
                actor=actor,
                interface=interface,
                issue_token=False,
                connects_on_demand=True,
            )
        except agent_services.AgentIdClash as clash:
            raise PairingError(str(clash)) from None
        row.agent, row.bound_at, row.bound_by = agent, now, actor[:150]
        row.save(update_fields=["agent", "bound_at", "bound_by"])
        record_event(
            actor=actor,
            interface=interface,
            action="xiaozhi.pair",
            target=f"agent:{row.device_id}",
            before={"ended_bindings": ended} if ended else None,
            after={"client_id": row.client_id, "board": row.board, "firmware": row.firmware},
            broadcast={"kind": "agent", "agent_id": row.device_id},
        )
    return row


def _label(row: Activation) -> str:
    board = row.board.get("name") or row.board.get("type") or ""
    return f"xiaozhi {board}".strip()[:100]


def _end_bindings(device_id: str, *, actor: str, now: datetime) -> list[str]:
    """End the device's current bindings; the Client-Ids they were for."""
    current = Activation.objects.select_for_update().filter(
        device_id=device_id, bound_at__isnull=False, unbound_at__isnull=True
    )
    ended = list(current.values_list("client_id", flat=True))
    current.update(unbound_at=now, unbound_by=actor[:150])
    return ended


def unbind(device_id: str, *, actor: str, interface: str) -> bool:
    """Unbind the device: its token revoked (a live connection hung up), its agent kept; at its
    next check-in it gets a new code. False when it is not bound."""
    now = timezone.now()
    with transaction.atomic():
        ended = _end_bindings(device_id, actor=actor, now=now)
        if not ended:
            return False
        agent_services.revoke_device_token(device_id, actor=actor, interface=interface)
        record_event(
            actor=actor,
            interface=interface,
            action="xiaozhi.unbind",
            target=f"agent:{device_id}",
            before={"client_ids": ended},
            broadcast={"kind": "agent", "agent_id": device_id},
        )
    return True


def remove_device(device_id: str, *, actor: str, interface: str) -> bool:
    """Remove an agent that is not connected (`devices.agents.services.remove_agent`), ending
    its stock xiaozhi binding first if it has one, in one transaction. False when there is no
    such agent or it is online."""
    with transaction.atomic():
        if not agent_services.remove_agent(device_id, actor=actor, interface=interface):
            return False
        ended = _end_bindings(device_id, actor=actor, now=timezone.now())
        if ended:
            record_event(
                actor=actor,
                interface=interface,
                action="xiaozhi.unbind",
                target=f"agent:{device_id}",
                before={"client_ids": ended},
            )
    return True
