"""The broker link: settings read once, and a paho client configured from them.

MQTT 5 by default (3.1.1 with `MQTT_PROTOCOL=3.1.1`), a fixed client id with a persistent
session so QoS 1 messages wait at the broker while the worker is away, acknowledgements
sent by the worker itself (only once a batch is committed), a last will saying `offline`
(on `homehub/status`, or on the worker's own `homehub/workers/<group>/<id>` in a shared
group), and paho's own reconnection with backoff. A session adopted from a stopped worker
(devices/mqtt/adoption.py) uses the same settings under that worker's client id, with no
will and no reconnection: the worker's return takes its session back.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, replace
from urllib.parse import unquote, urlsplit

import paho.mqtt.client as mqtt
from django.conf import settings
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

RECONNECT_MIN_SECONDS = 1
RECONNECT_MAX_SECONDS = 30
LEAVE_SECONDS = 2.0  # at most this long to say the will on the way out (MQTT 3.1.1)
# Client ids and group names become topic levels (the group's `$share/<group>/`, a grouped
# worker's `homehub/workers/<group>/<id>`): wildcards and separators would change topics.
TOPIC_UNSAFE = frozenset("/+#")


class BrokerConfigError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    host: str
    port: int
    tls: bool
    username: str
    password: str
    protocol: str  # "5" or "3.1.1"
    client_id: str
    session_expiry: int
    keepalive: int
    receive_maximum: int
    ca_certs: str = ""
    certfile: str = ""
    keyfile: str = ""
    tls_insecure: bool = False

    @property
    def address(self) -> str:
        """Where the broker is, for people and logs (never the credentials)."""
        return f"{'mqtts' if self.tls else 'mqtt'}://{self.host}:{self.port}"

    @classmethod
    def from_settings(cls, *, client_id: str | None = None, url: str | None = None) -> BrokerConfig:
        parts = urlsplit(url or settings.MQTT_URL)
        if parts.scheme not in {"mqtt", "mqtts"} or not parts.hostname:
            raise BrokerConfigError(
                f"MQTT_URL must look like mqtt://host:port or mqtts://host:port, not {url!r}"
            )
        protocol = settings.MQTT_PROTOCOL.strip()
        if protocol not in {"5", "3.1.1"}:
            raise BrokerConfigError(f"MQTT_PROTOCOL must be 5 or 3.1.1, not {protocol!r}")
        tls = parts.scheme == "mqtts"
        client_id = client_id or settings.MQTT_CLIENT_ID
        if not client_id or TOPIC_UNSAFE & set(client_id):
            raise BrokerConfigError(f"the MQTT client id must be non-empty, without / + or #: {client_id!r}")
        return cls(
            host=parts.hostname,
            port=parts.port or (8883 if tls else 1883),
            tls=tls,
            username=settings.MQTT_USERNAME or unquote(parts.username or ""),
            password=settings.MQTT_PASSWORD or unquote(parts.password or ""),
            protocol=protocol,
            client_id=client_id,
            session_expiry=settings.MQTT_SESSION_EXPIRY_SECONDS,
            keepalive=settings.MQTT_KEEPALIVE_SECONDS,
            receive_maximum=settings.MQTT_RECEIVE_MAXIMUM,
            ca_certs=settings.MQTT_CA_CERTS,
            certfile=settings.MQTT_CERTFILE,
            keyfile=settings.MQTT_KEYFILE,
            tls_insecure=settings.MQTT_TLS_INSECURE,
        )

    def adopting(self, client_id: str) -> BrokerConfig:
        """The same broker and credentials, under another worker's client id."""
        return replace(self, client_id=client_id)


def valid_group(group: str) -> bool:
    return not TOPIC_UNSAFE & set(group)


def make_client(config: BrokerConfig, *, will: tuple[str, str] | None, reconnect: bool = True) -> mqtt.Client:
    """A client ready for `connect`; callbacks are the caller's. `will`: (topic, payload) of a
    retained QoS 1 last will; `reconnect`: paho reconnects after a lost connection."""
    v5 = config.protocol == "5"
    client = mqtt.Client(
        CallbackAPIVersion.VERSION2,
        client_id=config.client_id,
        protocol=mqtt.MQTTv5 if v5 else mqtt.MQTTv311,
        clean_session=None if v5 else False,
        manual_ack=True,
        reconnect_on_failure=reconnect,
    )
    if config.username:
        client.username_pw_set(config.username, config.password or None)
    if config.tls:
        client.tls_set(
            ca_certs=config.ca_certs or None,
            certfile=config.certfile or None,
            keyfile=config.keyfile or None,
            cert_reqs=ssl.CERT_REQUIRED,
        )
        client.tls_insecure_set(config.tls_insecure)
    if will is not None:
        client.will_set(*will, qos=1, retain=True)
    client.reconnect_delay_set(RECONNECT_MIN_SECONDS, RECONNECT_MAX_SECONDS)
    client.max_queued_messages_set(0)  # outgoing: never drop what we publish while away
    return client


def connect(client: mqtt.Client, config: BrokerConfig) -> None:
    """Start connecting in paho's network thread; it retries until the broker answers."""
    properties = None
    if config.protocol == "5":
        properties = Properties(PacketTypes.CONNECT)
        properties.SessionExpiryInterval = config.session_expiry
        properties.ReceiveMaximum = config.receive_maximum
    client.connect_async(
        config.host,
        config.port,
        keepalive=config.keepalive,
        clean_start=False if config.protocol == "5" else mqtt.MQTT_CLEAN_START_FIRST_ONLY,
        properties=properties,
    )
    client.loop_start()


def leave(client: mqtt.Client, config: BrokerConfig, will: tuple[str, str] | None) -> None:
    """Disconnect cleanly (the session stays at the broker) and have the last will said:
    MQTT 5's "disconnect with will message", or the will published by hand on 3.1.1."""
    if will is not None and config.protocol == "5":
        client.disconnect(reasoncode=ReasonCode(PacketTypes.DISCONNECT, "Disconnect with will message"))
        return
    if will is not None and client.is_connected():
        client.publish(*will, qos=1, retain=True).wait_for_publish(LEAVE_SECONDS)
    client.disconnect()
