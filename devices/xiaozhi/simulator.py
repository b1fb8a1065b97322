"""A simulated ESP32 device that behaves like xiaozhi-style firmware (seed 001), over the
WebSocket (its MQTT mode is `devices.xiaozhi.mqtt.simulator`, on the same MCP server).

Used by `manage.py simulate_device`, the tests and the benchmarks. Like the firmware, it
connects with its headers, says `hello` and waits up to 10 s for the hub's, then serves
MCP inside the `{"session_id", "type": "mcp", "payload"}` envelope with the firmware's
habits (`FirmwareMcpServer`, whatever carries it): only `initialize`, `tools/list` and
`tools/call`; requests whose id is not an integer get no answer; error replies carry a
`message` and no `code`; `tools/list` pages are cut at about `page_bytes` and `nextCursor`
is the next tool's name, absent on the last page; tool results are text. `reply_delay`
slows every reply; `drop_on_call` closes the connection instead of answering a tool call.

With an `ota_url`, `onboard()` first does what stock firmware does at boot (xiaozhi-esp32's
`Application::CheckNewVersion` with `Ota`): check in at the OTA URL with its headers and
system information; while the answer holds an `activation` section, show the code
(`on_code`) and poll `<ota_url>/activate` (every `poll_seconds` on 202, `error_seconds`
after any other answer but 200, 10 times), answering the challenge with an HMAC-SHA256 under
`device_key` when it has a `serial_number` (activation v2), with `{}` otherwise; then check in
again. The `websocket` section's strings replace the stored ones (a token left out keeps the
one stored), and `connect()` uses them.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

logger = logging.getLogger(__name__)

HELLO_TIMEOUT = 10.0
DEFAULT_PAGE_BYTES = 8000  # the firmware's max_payload_size


class FirmwareError(Exception):
    """What a tool throws; the firmware answers with its text as the error message."""


@dataclass
class DeviceState:
    volume: int = 70
    brightness: int = 80
    theme: str = "light"
    lamp: bool = False


@dataclass
class FirmwareTool:
    name: str
    description: str
    properties: dict[str, dict[str, Any]]
    run: Callable[[DeviceState, dict[str, Any]], Any]
    annotations: dict[str, bool] = field(default_factory=dict)  # e.g. {"destructiveHint": True}

    def definition(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "object", "properties": self.properties}
        required = [name for name, prop in self.properties.items() if "default" not in prop]
        if required:
            schema["required"] = required
        definition = {"name": self.name, "description": self.description, "inputSchema": schema}
        if self.annotations:
            definition["annotations"] = self.annotations
        return definition

    def arguments(self, given: dict[str, Any]) -> dict[str, Any]:
        """Check and complete the arguments as the firmware's property list does."""
        values = {}
        for name, prop in self.properties.items():
            value = given.get(name, prop.get("default"))
            kind = {"integer": int, "boolean": bool, "string": str}[prop["type"]]
            if value is None or not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise FirmwareError(f"Missing valid argument: {name}")
            if kind is int and not prop.get("minimum", value) <= value <= prop.get("maximum", value):
                raise FirmwareError(
                    f"Value {value} of {name} is out of range [{prop['minimum']}, {prop['maximum']}]"
                )
            values[name] = value
        return values


def _status(state: DeviceState, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "audio_speaker": {"volume": state.volume},
        "screen": {"brightness": state.brightness, "theme": state.theme},
        "lamp": {"on": state.lamp},
        "battery": {"level": 87, "charging": False},
        "network": {"type": "wifi", "ssid": "home", "rssi": -54},
    }


def _set(attribute: str, argument: str) -> Callable[[DeviceState, dict[str, Any]], bool]:
    def run(state: DeviceState, args: dict[str, Any]) -> bool:
        setattr(state, attribute, args[argument])
        return True

    return run


def _set_theme(state: DeviceState, args: dict[str, Any]) -> bool:
    if args["theme"] not in ("light", "dark"):
        raise FirmwareError(f"Invalid theme: {args['theme']}")
    state.theme = args["theme"]
    return True


def firmware_tools() -> list[FirmwareTool]:
    """The common tools of the firmware (`McpServer::AddCommonTools`) and a lamp."""
    percent = {"type": "integer", "minimum": 0, "maximum": 100}
    return [
        FirmwareTool(
            "self.get_device_status",
            "Provides the real-time information of the device, including the current status of the "
            "audio speaker, screen, battery, network, etc. Use this tool for: 1. Answering questions "
            "about current condition (e.g. what is the current volume of the audio speaker?) "
            "2. As the first step to control the device (e.g. turn up / down the volume of the "
            "audio speaker, etc.)",
            {},
            _status,
        ),
        FirmwareTool(
            "self.audio_speaker.set_volume",
            "Set the volume of the audio speaker. If the current volume is unknown, you must call "
            "`self.get_device_status` tool first and then call this tool.",
            {"volume": percent},
            _set("volume", "volume"),
        ),
        FirmwareTool(
            "self.screen.set_brightness",
            "Set the brightness of the screen.",
            {"brightness": percent},
            _set("brightness", "brightness"),
        ),
        FirmwareTool(
            "self.screen.set_theme",
            "Set the theme of the screen. The theme can be `light` or `dark`.",
            {"theme": {"type": "string"}},
            _set_theme,
        ),
        FirmwareTool(
            "self.lamp.set_power",
            "Turn the lamp on or off.",
            {"on": {"type": "boolean"}},
            _set("lamp", "on"),
        ),
    ]


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return json.dumps(value)


class FirmwareMcpServer:
    """The firmware's MCP server (`McpServer::ParseMessage`), for a simulator that gives it the
    hub's payloads (`_on_mcp`) and a way to send its own (`_send`) and to drop the connection
    (`_drop`, for `drop_on_call`)."""

    tools: list[FirmwareTool]
    state: DeviceState
    page_bytes: int
    reply_delay: float
    drop_on_call: bool
    board: str
    firmware_version: str
    received: list[dict[str, Any]]
    _calls: set[asyncio.Task[None]]
    gone_errors: tuple[type[Exception], ...] = ()  # what `_send` raises once the hub is gone

    async def _send(self, payload: dict[str, Any]) -> None:
        raise NotImplementedError

    async def _drop(self) -> None:
        raise NotImplementedError

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        """A device notification (no id), as `Application::SendMcpMessage` sends it."""
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def _on_mcp(self, payload: Any) -> None:
        if not isinstance(payload, dict) or payload.get("jsonrpc") != "2.0":
            return
        self.received.append(payload)
        method = payload.get("method")
        if not isinstance(method, str) or method.startswith("notifications"):
            return
        params = payload.get("params", {})
        request_id = payload.get("id")
        if not isinstance(params, dict) or not isinstance(request_id, int) or isinstance(request_id, bool):
            return  # the firmware logs "Invalid id" and answers nothing
        if method == "initialize":
            await self._reply(request_id, self._initialize())
        elif method == "tools/list":
            await self._reply(request_id, self._tools_page(str(params.get("cursor") or "")))
        elif method == "tools/call":
            if self.drop_on_call:
                await self._drop()
                return
            task = asyncio.ensure_future(self._call(request_id, params))
            self._calls.add(task)
            task.add_done_callback(self._calls.discard)
        else:
            await self._reply_error(request_id, f"Method not implemented: {method}")

    def _initialize(self) -> dict[str, Any]:
        return {
            "protocolVersion": "2024-11-05",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": self.board, "version": self.firmware_version},
        }

    def _tools_page(self, cursor: str) -> dict[str, Any]:
        page: list[dict[str, Any]] = []
        size = len('{"tools":[]}')
        found = cursor == ""
        next_cursor = None
        for tool in self.tools:
            if not found:
                found = tool.name == cursor
                if not found:
                    continue
            definition = tool.definition()
            length = len(json.dumps(definition)) + 1
            if page and size + length + 30 > self.page_bytes:
                next_cursor = tool.name
                break
            page.append(definition)
            size += length
        result: dict[str, Any] = {"tools": page}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    async def _call(self, request_id: int, params: dict[str, Any]) -> None:
        name = params.get("name")
        arguments = params.get("arguments", {})
        tool = next((t for t in self.tools if t.name == name), None)
        if not isinstance(name, str) or not isinstance(arguments, dict):
            await self._reply_error(request_id, "Missing name or arguments")
        elif tool is None:
            await self._reply_error(request_id, f"Unknown tool: {name}")
        else:
            try:
                text = _as_text(tool.run(self.state, tool.arguments(arguments)))
            except FirmwareError as exc:
                await self._reply_error(request_id, str(exc))
                return
            await self._reply(request_id, {"content": [{"type": "text", "text": text}], "isError": False})

    async def _reply(self, request_id: int, result: dict[str, Any]) -> None:
        await self._send_reply({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def _reply_error(self, request_id: int, message: str) -> None:
        await self._send_reply({"jsonrpc": "2.0", "id": request_id, "error": {"message": message}})

    async def _send_reply(self, payload: dict[str, Any]) -> None:
        if self.reply_delay:
            await asyncio.sleep(self.reply_delay)
        try:
            await self._send(payload)
        except self.gone_errors:
            logger.debug("the hub went away before reply %s", payload.get("id"))


OTA_TIMEOUT = 10.0
ACTIVATE_TRIES = 10  # the firmware's polls of `activate` before it checks in again


class OtaFailed(Exception):
    """The OTA URL answered a check-in with something other than 200 (the firmware retries
    later; the simulator stops)."""

    def __init__(self, status: int, answer: Any) -> None:
        super().__init__(f"the OTA URL answered {status}: {answer}")
        self.status = status
        self.answer = answer


def _post(url: str, headers: dict[str, str], body: bytes) -> tuple[int, Any]:
    """One HTTP POST; its status and JSON answer (None when not JSON)."""
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=OTA_TIMEOUT) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, None


@dataclass
class SimulatedDevice(FirmwareMcpServer):
    url: str
    device_id: str
    token: str
    client_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    page_bytes: int = DEFAULT_PAGE_BYTES
    reply_delay: float = 0.0
    drop_on_call: bool = False
    board: str = "homehub-sim"
    firmware_version: str = "1.9.0"
    tools: list[FirmwareTool] = field(default_factory=firmware_tools)
    state: DeviceState = field(default_factory=DeviceState)
    ota_url: str = ""
    serial_number: str = ""  # set: activation v2, answering the challenge with `device_key`
    device_key: bytes = b"homehub-sim eFuse key"
    poll_seconds: float = 3.0
    error_seconds: float = 10.0
    on_code: Callable[[str, str], None] = lambda code, message: None
    gone_errors = (ConnectionClosed,)

    def __post_init__(self) -> None:
        self.session_id: str | None = None
        self.mqtt: dict[str, Any] = {}  # an OTA answer's mqtt section (this simulator speaks WebSocket)
        self.received: list[dict[str, Any]] = []  # every MCP payload from the hub
        self.closed = asyncio.Event()
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._calls: set[asyncio.Task[None]] = set()

    # --- the OTA exchange of stock firmware ----------------------------------------------------

    async def onboard(self) -> dict[str, Any]:
        """Check in (and activate) until the OTA URL hands over a configuration; its answer."""
        while True:
            answer = await self._check_in()
            activation = answer.get("activation")
            if not isinstance(activation, dict):
                return answer
            code, message = activation.get("code"), activation.get("message")
            if isinstance(code, str):
                self.on_code(code, message if isinstance(message, str) else "")
            challenge = activation.get("challenge")
            for _ in range(ACTIVATE_TRIES):
                # Without a challenge the firmware gives up on the poll before sending it.
                status = await self._activate(challenge) if isinstance(challenge, str) else 0
                if status == 200:
                    break
                await asyncio.sleep(self.poll_seconds if status == 202 else self.error_seconds)

    def _ota_headers(self) -> dict[str, str]:
        headers = {
            "Activation-Version": "2" if self.serial_number else "1",
            "Device-Id": self.device_id,
            "Client-Id": self.client_id,
            "User-Agent": f"{self.board}/{self.firmware_version}",
            "Accept-Language": "en-US",
            "Content-Type": "application/json",
        }
        if self.serial_number:
            headers["Serial-Number"] = self.serial_number
        return headers

    def system_info(self) -> dict[str, Any]:
        """The check-in's body (`Board::GetSystemInfoJson`), in short."""
        return {
            "version": 2,
            "language": "en-US",
            "mac_address": self.device_id,
            "uuid": self.client_id,
            "chip_model_name": "esp32s3",
            "application": {"name": "xiaozhi", "version": self.firmware_version},
            "ota": {"label": "ota_0"},
            "board": {"type": self.board, "name": self.board},
        }

    async def _check_in(self) -> dict[str, Any]:
        body = json.dumps(self.system_info()).encode()
        status, answer = await sync_to_async(_post, thread_sensitive=False)(
            self.ota_url, self._ota_headers(), body
        )
        if status != 200 or not isinstance(answer, dict):
            raise OtaFailed(status, answer)
        # As the firmware keeps them in its settings: strings replace, what is left out stays.
        websocket = answer.get("websocket")
        if isinstance(websocket, dict):
            if isinstance(websocket.get("url"), str):
                self.url = websocket["url"]
            if isinstance(websocket.get("token"), str):
                self.token = websocket["token"]
        mqtt = answer.get("mqtt")
        if isinstance(mqtt, dict):
            self.mqtt.update({k: v for k, v in mqtt.items() if isinstance(v, str | int)})
            logger.info("%s: offered MQTT, which this simulator does not speak", self.device_id)
        return answer

    async def _activate(self, challenge: str) -> int:
        """One poll of `activate` (the firmware's `Ota::Activate`); its status."""
        payload: dict[str, str] = {}
        if self.serial_number:
            digest = hmac.new(self.device_key, challenge.encode(), hashlib.sha256).hexdigest()
            payload = {
                "algorithm": "hmac-sha256",
                "serial_number": self.serial_number,
                "challenge": challenge,
                "hmac": digest,
            }
        url = self.ota_url + ("activate" if self.ota_url.endswith("/") else "/activate")
        status, _ = await sync_to_async(_post, thread_sensitive=False)(
            url, self._ota_headers(), json.dumps(payload).encode()
        )
        return status

    # --- connection --------------------------------------------------------------------------

    async def connect(self) -> str:
        """Open the socket, say hello, wait for the hub's hello; returns the session id."""
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Protocol-Version": "1",
            "Device-Id": self.device_id,
            "Client-Id": self.client_id,
        }
        self._ws = await connect(self.url, additional_headers=headers, open_timeout=HELLO_TIMEOUT)
        hello = {
            "type": "hello",
            "version": 1,
            "features": {"mcp": True},
            "transport": "websocket",
            "audio_params": {"format": "opus", "sample_rate": 16000, "channels": 1, "frame_duration": 60},
        }
        await self._ws.send(json.dumps(hello))
        async with asyncio.timeout(HELLO_TIMEOUT):
            while True:
                message = json.loads(await self._ws.recv())
                if message.get("type") == "hello" and message.get("transport") == "websocket":
                    break
        self.session_id = message.get("session_id")
        self._reader = asyncio.ensure_future(self._read())
        return self.session_id or ""

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)

    async def send_frame(self, frame: str | bytes) -> None:
        """Send anything at all (tests of what the hub tolerates)."""
        assert self._ws is not None
        await self._ws.send(frame)

    async def _send(self, payload: dict[str, Any]) -> None:
        assert self._ws is not None
        await self._ws.send(json.dumps({"session_id": self.session_id, "type": "mcp", "payload": payload}))

    async def _drop(self) -> None:
        assert self._ws is not None
        await self._ws.close()

    async def _read(self) -> None:
        assert self._ws is not None
        try:
            async for frame in self._ws:
                message = json.loads(frame) if isinstance(frame, str) else None
                if isinstance(message, dict) and message.get("type") == "mcp":
                    await self._on_mcp(message.get("payload"))
        except ConnectionClosed:
            pass
        finally:
            self.closed.set()
