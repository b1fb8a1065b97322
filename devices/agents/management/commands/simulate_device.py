import asyncio

from django.core.management.base import BaseCommand, CommandError

from devices.agents.simulator import DEFAULT_PAGE_BYTES, OtaFailed, SimulatedDevice


class Command(BaseCommand):
    help = (
        "Connect a simulated ESP32 device (xiaozhi-style firmware) to a hub and serve its tools; with "
        "--ota, first do stock firmware's OTA exchange (show the activation code, wait to be added, "
        "then connect with the WebSocket URL and token the hub hands over)."
    )

    def add_arguments(self, parser):
        parser.add_argument("device_id", help="The agent id, sent as Device-Id (a stock device's MAC)")
        parser.add_argument("token", nargs="?", default="", help="The device token (not with --ota)")
        parser.add_argument("--url", default="ws://127.0.0.1:8000/ws/devices/")
        parser.add_argument(
            "--ota", default="", metavar="OTA_URL", help="e.g. http://127.0.0.1:8000/xiaozhi/ota/"
        )
        parser.add_argument(
            "--serial-number", default="", help="with --ota: activate as v2, answering the hub's challenge"
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
        page_bytes,
        reply_delay,
        drop_on_call,
        **options,
    ):
        if bool(token) == bool(ota):
            raise CommandError("give either the device token or --ota OTA_URL")
        device = SimulatedDevice(
            url,
            device_id,
            token,
            page_bytes=page_bytes,
            reply_delay=reply_delay,
            drop_on_call=drop_on_call,
            ota_url=ota,
            serial_number=serial_number,
            on_code=self._show_code,
        )

        async def run() -> None:
            if ota:
                await device.onboard()
                self.stdout.write(f"Configured by the hub: {device.url}")
            session = await device.connect()
            self.stdout.write(f"Connected as {device_id}, session {session}. Ctrl-C to stop.")
            self.stdout.flush()
            await device.closed.wait()

        try:
            asyncio.run(run())
        except KeyboardInterrupt:
            return
        except OtaFailed as failure:
            raise CommandError(str(failure)) from None
        self.stdout.write("The hub closed the connection.")

    def _show_code(self, code: str, message: str) -> None:
        """What the device's screen shows and its speaker says."""
        self.stdout.write(f"Activation code: {code} ({message})")
        self.stdout.write(
            f"Add the device on the dashboard's Devices page, or: python manage.py pair_device {code}"
        )
        self.stdout.flush()
