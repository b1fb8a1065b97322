"""What the broker really does with shared subscriptions, sessions and redeliveries: the facts
the MQTT worker's failover and exactly-once storage are built on (docs/MQTT.md quotes them).

Each case runs on a fresh private Mosquitto (loopback, free port, the shipped
`deploy/mosquitto/mosquitto.conf` queue and persistence settings) with bare paho clients, two
members `A` and `B` of the shared group `$share/g/t/#`, MQTT 5 and QoS 1; a member that
"crashes" drops its socket without a DISCONNECT; one that "stops" says DISCONNECT. Members
acknowledge what they receive unless the case holds acknowledgements back (a worker between
storing a batch and acknowledging it). The last case runs the shipped ACL file with a broker
user it does not name. Bounded and self-stopping: about 35 s.

    python bench/measure_mqtt_sessions.py            # every case, a table of what happened
    python bench/measure_mqtt_sessions.py --json     # the same as JSON
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from harness import ROOT, Mosquitto
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

GROUP_FILTER = "$share/g/t/#"
SETTLE = 0.8  # seconds for the broker's deliveries to land on loopback
WEEK = 7 * 86400


@dataclass
class Member:
    """One MQTT 5 client of the shared group, recording (payload, packet id, DUP) of each message."""

    port: int
    client_id: str
    expiry: int = WEEK
    ack: bool = True
    receive_maximum: int = 20
    reconnect: bool = True
    got: list[tuple[str, int, bool]] = field(default_factory=list)
    session_present: bool | None = None
    client: mqtt.Client | None = None

    def connect(self, *, subscribe: bool = True) -> Member:
        c = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=self.client_id,
            protocol=mqtt.MQTTv5,
            manual_ack=True,
            reconnect_on_failure=self.reconnect,
        )

        def on_message(client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
            self.got.append((message.payload.decode(), message.mid, bool(message.dup)))
            if self.ack:
                client.ack(message.mid, message.qos)

        def on_connect(client: mqtt.Client, userdata: Any, flags: Any, reason: Any, props: Any) -> None:
            self.session_present = flags.session_present
            if subscribe:
                client.subscribe(GROUP_FILTER, qos=1)

        c.on_message = on_message
        c.on_connect = on_connect
        properties = Properties(PacketTypes.CONNECT)
        properties.SessionExpiryInterval = self.expiry
        properties.ReceiveMaximum = self.receive_maximum
        c.connect("127.0.0.1", self.port, clean_start=False, properties=properties)
        c.loop_start()
        deadline = time.monotonic() + 5
        while self.session_present is None and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)  # the SUBACK
        self.client = c
        return self

    def stop(self) -> None:
        assert self.client is not None
        self.client.disconnect()
        self.client.loop_stop()

    def crash(self) -> None:
        assert self.client is not None
        sock = self.client.socket()
        if sock is not None:
            sock.close()
        self.client.loop_stop()

    def keys(self) -> set[tuple[str, int]]:
        return {(payload, mid) for payload, mid, _ in self.got}

    def repeats(self) -> int:
        return sum(dup for _, _, dup in self.got)


def publish(port: int, count: int, start: int = 0) -> None:
    """`count` distinct QoS 1 messages, each acknowledged by the broker."""
    p = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="", protocol=mqtt.MQTTv5)
    p.connect("127.0.0.1", port)
    p.loop_start()
    infos = [p.publish("t/x", str(i), qos=1) for i in range(start, start + count)]
    for info in infos:
        info.wait_for_publish(10)
    p.disconnect()
    p.loop_stop()
    time.sleep(SETTLE)


def case(run: Callable[[int], dict[str, Any]]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        broker = Mosquitto(Path(folder)).start()
        try:
            return {"case": run.__doc__, **run(broker.port)}
        finally:
            broker.stop()


# --- the cases ---------------------------------------------------------------------------------


def stopped_persistent(port: int) -> dict[str, Any]:
    """B stopped, persistent sessions (expiry 7 d): does A get B's share?"""
    a = Member(port, "A").connect()
    b = Member(port, "B").connect()
    b.stop()
    publish(port, 200)
    at_a = len(a.got)
    back = Member(port, "B").connect()
    time.sleep(SETTLE)
    return {"published": 200, "A": at_a, "waited for B": len(back.got)}


def stopped_clean(port: int) -> dict[str, Any]:
    """B stopped, clean sessions (expiry 0): does A get everything?"""
    a = Member(port, "A", expiry=0).connect()
    b = Member(port, "B", expiry=0).connect()
    b.stop()
    publish(port, 200)
    return {"published": 200, "A": len(a.got)}


def crashed_clean(port: int) -> dict[str, Any]:
    """B crashed holding unacknowledged messages, clean sessions: are they sent to A?"""
    a = Member(port, "A", expiry=0).connect()
    b = Member(port, "B", expiry=0, ack=False).connect()
    publish(port, 100)
    in_flight = len(b.got)
    b.crash()
    time.sleep(SETTLE)
    publish(port, 20, 1000)
    return {"published": 120, "B held unacked": in_flight, "A": len(a.got), "lost": 120 - len(a.got)}


def expired_short(port: int) -> dict[str, Any]:
    """B stopped with a 3 s session expiry: what happens to its share at expiry?"""
    a = Member(port, "A").connect()
    b = Member(port, "B", expiry=3).connect()
    b.stop()
    publish(port, 200)
    before = len(a.got)
    time.sleep(3.5)
    after_expiry = len(a.got)
    publish(port, 200, 1000)
    return {
        "published": 400,
        "A before expiry": before,
        "A at expiry": after_expiry,
        "A after expiry (of 200 more)": len(a.got) - after_expiry,
        "lost": 400 - len(a.got),
    }


def resumed_after_crash(port: int) -> dict[str, Any]:
    """B crashed holding unacknowledged messages and its client id connects again."""
    Member(port, "A").connect()
    b = Member(port, "B", ack=False).connect()
    publish(port, 100)
    b.crash()
    again = Member(port, "B").connect(subscribe=False)
    time.sleep(SETTLE)
    return {
        "B held unacked": len(b.got),
        "resent": len(again.got),
        "resent with DUP": again.repeats(),
        "same packet id and payload": len(b.keys() & again.keys()),
    }


def adopted_and_returned(port: int) -> dict[str, Any]:
    """A opens B's session (B's client id, no reconnection) after B crashed; then B returns."""
    a = Member(port, "A").connect()
    b = Member(port, "B", ack=False).connect()
    publish(port, 100)
    b.crash()
    proxy = Member(port, "B", ack=False, reconnect=False).connect(subscribe=False)
    time.sleep(SETTLE)
    held = set(proxy.keys())
    publish(port, 100, 1000)
    back = Member(port, "B").connect()
    time.sleep(SETTLE)
    before = len(back.got), len(a.got)
    publish(port, 100, 2000)
    return {
        "B held unacked": len(b.got),
        "adopter got B's unacked": len(b.keys() & held),
        "adopter's unacked resent to B with DUP, same ids": len(held & back.keys()),
        "B's share of 100 after its return": len(back.got) - before[0],
        "A's share": len(a.got) - before[1],
        "new packet ids continue from": min(m for _, m, d in back.got if not d),
    }


def publisher_repeats(port: int) -> dict[str, Any]:
    """A publisher sends the same PUBLISH twice, the second with DUP (its PUBACK was lost)."""
    a = Member(port, "A").connect()
    sent = {}
    for qos in (1, 2):
        before = len(a.got)
        raw_publish_twice(port, f"q{qos}", qos)
        time.sleep(SETTLE)
        sent[f"QoS {qos}: forwarded"] = len(a.got) - before
    return sent


def raw_publish_twice(port: int, payload: str, qos: int) -> None:
    """MQTT 3.1.1 by hand: CONNECT, PUBLISH packet id 7, the same again with DUP, then PUBREL."""

    def packet(kind: int, body: bytes) -> bytes:
        return bytes([kind, len(body)]) + body

    def string(text: str) -> bytes:
        return struct.pack("!H", len(text)) + text.encode()

    with socket.create_connection(("127.0.0.1", port), 5) as s:
        s.sendall(packet(0x10, string("MQTT") + bytes([4, 0x02]) + struct.pack("!H", 30) + string("raw")))
        s.recv(4)
        publish_body = string("t/raw") + struct.pack("!H", 7) + payload.encode()
        s.sendall(packet(0x30 | qos << 1, publish_body))
        s.sendall(packet(0x38 | qos << 1, publish_body))  # DUP set
        if qos == 2:
            time.sleep(0.2)
            s.sendall(packet(0x62, struct.pack("!H", 7)))  # PUBREL
        time.sleep(0.3)


def acl_case() -> dict[str, Any]:
    """The shipped ACL file, and a broker user it does not name: what do SUBACK and delivery say?"""
    with tempfile.TemporaryDirectory() as folder:
        broker = Mosquitto(Path(folder))
        passwd = Path(folder) / "passwd"
        passwd.touch(mode=0o600)
        for user in ("stranger", "esp32_01"):
            subprocess.run(["mosquitto_passwd", "-b", str(passwd), user, "pw"], check=True)
        broker.config.write_text(
            broker.config.read_text().replace("allow_anonymous true", "allow_anonymous false")
            + f"password_file {passwd}\nacl_file {ROOT / 'deploy' / 'mosquitto' / 'homehub.acl'}\n"
        )
        broker.start()
        try:
            codes: list[str] = []
            got: list[str] = []
            listener = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="stranger", protocol=mqtt.MQTTv5)
            listener.username_pw_set("stranger", "pw")
            listener.on_subscribe = lambda c, u, mid, rcs, p: codes.extend(str(rc) for rc in rcs)
            listener.on_message = lambda c, u, m: got.append(m.topic)
            listener.connect("127.0.0.1", broker.port)
            listener.loop_start()
            listener.subscribe([("$share/g/office/#", 1), ("office/#", 1), ("mcp/+/response/+", 1)])
            agent = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="esp32_01", protocol=mqtt.MQTTv5)
            agent.username_pw_set("esp32_01", "pw")
            agent.connect("127.0.0.1", broker.port)
            agent.loop_start()
            time.sleep(0.3)
            for topic in ("office/lab/sensor/esp32_01/temperature", "mcp/esp32_01/response/1"):
                agent.publish(topic, "1", qos=1).wait_for_publish(5)
            time.sleep(SETTLE)
            return {"case": acl_case.__doc__, "SUBACK": codes, "messages delivered (of 2)": len(got)}
        finally:
            broker.stop()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = [
        case(run)
        for run in (
            stopped_persistent,
            stopped_clean,
            crashed_clean,
            expired_short,
            resumed_after_crash,
            adopted_and_returned,
            publisher_repeats,
        )
    ]
    results += [restart_case(), acl_case()]
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for result in results:
            print(result.pop("case"))
            for key, value in result.items():
                print(f"    {key}: {value}")
    return 0


def restart_case() -> dict[str, Any]:
    """B holds unacknowledged messages; the broker stops cleanly (SIGTERM) and starts again."""
    with tempfile.TemporaryDirectory() as folder:
        broker = Mosquitto(Path(folder)).start()
        try:
            Member(broker.port, "A").connect()
            b = Member(broker.port, "B", ack=False).connect()
            publish(broker.port, 100)
            broker.stop()
            b.crash()
            broker.start()
            again = Member(broker.port, "B").connect(subscribe=False)
            time.sleep(SETTLE)
            return {
                "case": restart_case.__doc__,
                "B held unacked": len(b.got),
                "resent with DUP": again.repeats(),
                "same packet id and payload": len(b.keys() & again.keys()),
                "resent in all": len(again.got),
            }
        finally:
            broker.stop()


if __name__ == "__main__":
    raise SystemExit(main())
