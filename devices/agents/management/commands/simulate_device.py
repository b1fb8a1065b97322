import asyncio

from django.core.management.base import BaseCommand

from devices.agents.simulator import DEFAULT_PAGE_BYTES, SimulatedDevice


class Command(BaseCommand):
    help = "Connect a simulated ESP32 device (xiaozhi-style firmware) to a hub and serve its tools."

    def add_arguments(self, parser):
        parser.add_argument("device_id", help="The registered agent id (sent as Device-Id)")
        parser.add_argument("token", help="The device token printed by register_agent")
        parser.add_argument("--url", default="ws://127.0.0.1:8000/ws/devices/")
        parser.add_argument("--page-bytes", type=int, default=DEFAULT_PAGE_BYTES, help="tools/list page size")
        parser.add_argument("--reply-delay", type=float, default=0.0, help="seconds before every reply")
        parser.add_argument(
            "--drop-on-call",
            action="store_true",
            help="close the connection instead of answering a tool call",
        )

    def handle(self, *args, device_id, token, url, page_bytes, reply_delay, drop_on_call, **options):
        device = SimulatedDevice(
            url, device_id, token, page_bytes=page_bytes, reply_delay=reply_delay, drop_on_call=drop_on_call
        )

        async def run() -> None:
            session = await device.connect()
            self.stdout.write(f"Connected as {device_id}, session {session}. Ctrl-C to stop.")
            self.stdout.flush()
            await device.closed.wait()

        try:
            asyncio.run(run())
        except KeyboardInterrupt:
            return
        self.stdout.write("The hub closed the connection.")
