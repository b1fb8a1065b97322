"""The home on the bus: state out, commands in, so other home systems can follow and drive it.

Each light's state is published retained on `homehub/lights/<name>/state` and the alarm's
on `homehub/alarm/state` (`{"on": true}`, `{"armed": false}`), whenever anything changes
it (the worker listens to the same broadcasts as the dashboard) and on every connection.
Commands arrive on `homehub/lights/<name>/set` (`on`/`off`, `true`/`false`, `1`/`0` or
`{"on": true}`) and `homehub/alarm/set` (`arm`/`disarm`, `true`/`false` or `{"armed": true}`)
and go through the services like any other door, audited with interface `mqtt`.

Disarming is the one command a person must stand behind: a broker may let anyone publish
(the demo's does), and the hub's other doors ask a person before a token disarms. Over MQTT
no one can be asked, so a disarm carries the owner's code, `{"armed": false, "code": "..."}`,
checked in constant time against MQTT_DISARM_CODE; unset, disarming over MQTT is off.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections.abc import Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings

from audit.changes import CHANGES_GROUP
from audit.models import Event
from common.groups import channel_layer, receive_forever
from common.mqtt import topics
from devices.home import selectors, services
from devices.home.errors import HomeError
from mcp_endpoint.engine import jsonrpc

logger = logging.getLogger(__name__)

ACTOR = "mqtt"
MAX_COMMAND_BYTES = 256
TRUE_WORDS = {"on", "true", "1", "arm", "armed", "yes"}
FALSE_WORDS = {"off", "false", "0", "disarm", "disarmed", "no"}

Publish = Callable[[str, str, bool], None]  # topic, payload, retain


class CommandError(ValueError):
    pass


def _body(payload: bytes) -> Any:
    if len(payload) > MAX_COMMAND_BYTES:
        raise CommandError("command too large")
    text = payload.decode("utf-8", errors="replace").strip()
    try:
        return jsonrpc.loads(text)
    except ValueError:
        return text


def parse_switch(payload: bytes, key: str) -> bool:
    """The on/off (armed/disarmed) a command asks for, in any of the accepted forms."""
    body = _body(payload)
    if isinstance(body, dict):
        body = body.get(key)
    if isinstance(body, bool):
        return body
    word = str(body).strip().lower() if isinstance(body, str | int) else ""
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise CommandError(f'expected on/off, true/false or {{"{key}": true|false}}')


def check_disarm_code(payload: bytes) -> None:
    """A disarm must carry MQTT_DISARM_CODE (`{"armed": false, "code": "..."}`); raises
    `CommandError` saying why not, also when no code is configured (disarming is then off)."""
    expected = settings.MQTT_DISARM_CODE
    if not expected:
        raise CommandError(
            'disarming over MQTT is off: set MQTT_DISARM_CODE and send {"armed": false, "code": "<the code>"}'
        )
    body = _body(payload)
    code = body.get("code") if isinstance(body, dict) else None
    if not isinstance(code, str) or not hmac.compare_digest(code.encode(), expected.encode()):
        raise CommandError('disarm refused: the command must carry the right "code"')


def without_code(payload: bytes) -> bytes:
    """The command as it may be kept among rejected messages: a code it carries is blanked
    (a wrong one may be a near miss of the right one)."""
    try:
        body = _body(payload)
    except CommandError:
        return payload
    if not isinstance(body, dict) or "code" not in body:
        return payload
    return json.dumps({**body, "code": "***"}).encode()


class HomeBridge:
    def __init__(self, publish: Publish) -> None:
        self._publish = publish
        self._tasks: list[asyncio.Task[Any]] = []

    async def start(self) -> None:
        layer = channel_layer()
        channel = await layer.new_channel()
        await layer.group_add(CHANGES_GROUP, channel)
        self._tasks = [
            asyncio.ensure_future(receive_forever(layer, channel, self._on_home_event, "mqtt home"))
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()

    async def publish_all(self) -> None:
        """Every light and the alarm, retained (on each connection: the broker may have
        restarted without its store)."""
        lights, alarm = await sync_to_async(lambda: (selectors.lights(), selectors.alarm()))()
        for light in lights:
            self._light(light["name"], light["on"])
        self._alarm(alarm["armed"])

    def _light(self, name: str, on: bool) -> None:
        self._publish(topics.light_state(name), json.dumps({"on": on}), True)

    def _alarm(self, armed: bool) -> None:
        self._publish(topics.ALARM_STATE, json.dumps({"armed": armed}), True)

    async def _on_home_event(self, message: dict[str, Any]) -> None:
        event = message.get("event") or {}
        kind = event.get("kind")
        if kind == "light" and isinstance(event.get("name"), str):
            self._light(event["name"], bool(event.get("on")))
        elif kind == "alarm":
            self._alarm(bool(event.get("armed")))
        elif kind == "home":
            await self.publish_all()

    # --- commands ------------------------------------------------------------------------------

    async def on_light_command(self, name: str, payload: bytes) -> str | None:
        """Apply a light command; returns why not when it cannot be applied."""
        try:
            on = parse_switch(payload, "on")
            await services.aset_light_state(name, on, actor=ACTOR, interface=Event.Interface.MQTT)
        except (CommandError, HomeError) as exc:
            return str(exc)
        return None

    async def on_alarm_command(self, payload: bytes) -> str | None:
        try:
            armed = parse_switch(payload, "armed")
            if not armed:
                check_disarm_code(payload)
            await services.aset_alarm_state(armed, actor=ACTOR, interface=Event.Interface.MQTT)
        except CommandError as exc:
            return str(exc)
        return None
