"""Per-device MQTT credentials and topics, and the settings that say where devices connect.

A device's client id is its agent id in topic-safe characters (a MAC's colons become
underscores, as xiaozhi's own deployments do); it is also its user name and the key of its
two topics: it publishes on `devices/up/<client id>` and is delivered to on
`devices/p2p/<client id>` (stock firmware never subscribes: the device listener subscribes
it there itself). Passwords are 256-bit random tokens, minted for each OTA answer (the
previous one stops working for new connections); only their SHA-256 is kept, as for device
tokens.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.services import record_event
from devices.agents.models import Agent
from devices.xiaozhi.mqtt.models import MqttCredential

PUBLISH_PREFIX = "devices/up/"
DELIVERY_PREFIX = "devices/p2p/"
FIRMWARE_TLS_PORT = 8883  # stock firmware speaks TLS to this port, plain MQTT to any other


class EndpointError(ValueError):
    """DEVICE_MQTT_ENDPOINT or DEVICE_MQTT_LISTEN is not usable; the text says why."""


@dataclass(frozen=True, slots=True)
class Address:
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def _address(value: str, name: str) -> Address:
    host, sep, port = value.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise EndpointError(f"{name} must be host:port (e.g. 192.168.1.10:1883), not {value!r}")
    return Address(host, int(port))


def endpoint() -> Address | None:
    """Where devices are told to connect (DEVICE_MQTT_ENDPOINT), or None: no device MQTT."""
    if not settings.DEVICE_MQTT_ENDPOINT:
        return None
    address = _address(settings.DEVICE_MQTT_ENDPOINT, "DEVICE_MQTT_ENDPOINT")
    if address.port == FIRMWARE_TLS_PORT:
        raise EndpointError(
            "DEVICE_MQTT_ENDPOINT's port is 8883, to which stock firmware speaks TLS; the device "
            "listener speaks plain MQTT: use another port (e.g. 1883)"
        )
    return address


def listen_address() -> Address | None:
    """Where the device listener binds: DEVICE_MQTT_LISTEN, else every interface on the
    endpoint's port; None when DEVICE_MQTT_ENDPOINT is unset."""
    public = endpoint()
    if public is None:
        return None
    if settings.DEVICE_MQTT_LISTEN:
        return _address(settings.DEVICE_MQTT_LISTEN, "DEVICE_MQTT_LISTEN")
    return Address("0.0.0.0", public.port)


def publish_topic(client_id: str) -> str:
    return PUBLISH_PREFIX + client_id


def delivery_topic(client_id: str) -> str:
    return DELIVERY_PREFIX + client_id


def hash_password(password: str) -> str:
    return hashlib.sha256(password.encode()).hexdigest()


def _client_id_for(agent: Agent) -> str:
    """Readable and topic-safe; a digest tells apart two agent ids that read the same."""
    readable = re.sub(r"[^A-Za-z0-9_-]", "_", agent.agent_id)[:48] or "device"
    taken = MqttCredential.objects.filter(client_id=readable).exclude(agent=agent).exists()
    if not taken:
        return readable
    return f"{readable}-{hashlib.sha256(agent.agent_id.encode()).hexdigest()[:10]}"


def issue(agent: Agent, *, actor: str, interface: str) -> tuple[MqttCredential, str]:
    """Mint the device's password (its client id is kept from an earlier issue); the row and
    the password, which is never stored."""
    password = secrets.token_urlsafe(32)
    with transaction.atomic():
        credential = MqttCredential.objects.select_for_update().filter(agent=agent).first()
        rotated = credential is not None
        if credential is None:
            credential = MqttCredential(agent=agent, client_id=_client_id_for(agent))
        credential.password_hash = hash_password(password)
        credential.issued_at = timezone.now()
        credential.save()
        record_event(
            actor=actor,
            interface=interface,
            action="agent.mqtt_credentials",
            target=f"agent:{agent.agent_id}",
            after={"client_id": credential.client_id, "rotated": rotated},
        )
    return credential, password


@dataclass(frozen=True, slots=True)
class Identity:
    """A device the listener admitted: its agent, its client id and its password's hash."""

    agent: Agent
    client_id: str
    password_hash: str

    @property
    def agent_id(self) -> str:
        return self.agent.agent_id

    @property
    def publish_topic(self) -> str:
        return publish_topic(self.client_id)

    @property
    def delivery_topic(self) -> str:
        return delivery_topic(self.client_id)

    def matches(self, client_id: str | None, username: str | None, password: str | None) -> bool:
        """The CONNECT's own credentials: this client id, as user name, with this password."""
        return (
            client_id == self.client_id
            and username == self.client_id
            and password is not None
            and hmac.compare_digest(self.password_hash, hash_password(password))
        )


def identify(client_id: str, username: str | None, password: str | None) -> Identity | None:
    """The device these CONNECT credentials belong to, or None."""
    if not client_id or len(client_id) > 64 or not password or len(password) > 200:
        return None
    row = MqttCredential.objects.select_related("agent").filter(client_id=client_id).first()
    if row is None:
        return None
    identity = Identity(row.agent, row.client_id, row.password_hash)
    return identity if identity.matches(client_id, username, password) else None


# For the listener (an event loop): a read, through Django's database thread (`common.tasks`).
aidentify = sync_to_async(identify)
