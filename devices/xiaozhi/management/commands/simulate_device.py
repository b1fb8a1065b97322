import asyncio
import json

from django.core.management.base import BaseCommand, CommandError

from devices.xiaozhi.mqtt.simulator import ConnectRefused, SimulatedMqttDevice
from devices.xiaozhi.simulator import DEFAULT_PAGE_BYTES, OtaFailed, SimulatedDevice


class Command(BaseCommand):
    help = (
        "Connect a simulated ESP32 device (xiaozhi-style firmware) to a hub and serve its tools: "
        "over the WebSocket (DEVICE_ID TOKEN, or DEVICE_ID --ota OTA_URL to first do stock "
        "firmware's OTA exchange: show the activation code, wait to be added, then connect with "
        "the URL and token the hub hands over), or with --mqtt SECTION in MQTT mode as stock "
        "firmware does, SECTION being the `mqtt` section of its OTA answer (JSON)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "device_id", nargs="?", help="The agent id, sent as Device-Id (a stock device's MAC)"
        )
        parser.add_argument("token", nargs="?", default="", help="The device token (not with --ota)")
        parser.add_argument("--url", default="ws://127.0.0.1:8000/ws/devices/")
        parser.add_argument(
            "--ota", default="", metavar="OTA_URL", help="e.g. http://127.0.0.1:8000/xiaozhi/ota/"
        )
        parser.add_argument(
            "--serial-number", default="", help="with --ota: activate as v2, answering the hub's challenge"
        )
        parser.add_argument(
            "--mqtt",
            metavar="SECTION",
            help="MQTT mode: the OTA answer's mqtt section as JSON (`device_mqtt_section` prints one)",
        )
        parser.add_argument(
            "--hello", action="store_true", help="MQTT mode: open a conversation once connected"
        )
        parser.add_argument("--page-bytes", type=int, default=DEFAULT_PAGE_BYTES, help="tools/list page size")
        parser.add_argument("--reply-delay", type=float, default=0.0, help="seconds before every reply")
        parser.add_argument(
            "--drop-on-call",
            action="store_true",
            help="close the connection instead of answering a tool call",
        )

    def handle(
        self,
        *args,
        device_id,
        token,
        url,
        ota,
        serial_number,
        mqtt,
        hello,
        page_bytes,
        reply_delay,
        drop_on_call,
        **options,
    ):
        behaviour = {"page_bytes": page_bytes, "reply_delay": reply_delay, "drop_on_call": drop_on_call}
        if mqtt:
            try:
                section = json.loads(mqtt)
            except ValueError:
                raise CommandError("--mqtt takes the section as JSON") from None
            run = self._mqtt(SimulatedMqttDevice(section, **behaviour), hello)
        elif device_id and bool(token) != bool(ota):
            device = SimulatedDevice(
                url,
                device_id,
                token,
                ota_url=ota,
                serial_number=serial_number,
                on_code=self._show_code,
                **behaviour,
            )
            run = self._websocket(device, onboard=bool(ota))
        else:
            raise CommandError(
                "give DEVICE_ID with its TOKEN or --ota OTA_URL (WebSocket), or --mqtt SECTION"
            )
        try:
            asyncio.run(run)
        except KeyboardInterrupt:
            return
        except OtaFailed as failure:
            raise CommandError(str(failure)) from None
        self.stdout.write("The hub closed the connection.")

    async def _websocket(self, device: SimulatedDevice, *, onboard: bool) -> None:
        if onboard:
            await device.onboard()
            self.stdout.write(f"Configured by the hub: {device.url}")
        session = await device.connect()
        self.stdout.write(f"Connected as {device.device_id}, session {session}. Ctrl-C to stop.")
        self.stdout.flush()
        await device.closed.wait()

    async def _mqtt(self, device: SimulatedMqttDevice, hello: bool) -> None:
        try:
            await device.connect()
        except ConnectRefused as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"Connected as {device.agent_id} over MQTT. Ctrl-C to stop.")
        if hello:
            answer = await device.open_conversation()
            self.stdout.write(f"The hub's hello: {json.dumps(answer)}")
        self.stdout.flush()
        await device.closed.wait()

    def _show_code(self, code: str, message: str) -> None:
        """What the device's screen shows and its speaker says."""
        self.stdout.write(f"Activation code: {code} ({message})")
        self.stdout.write(
            f"Add the device on the dashboard's Devices page, or: python manage.py pair_device {code}"
        )
        self.stdout.flush()
