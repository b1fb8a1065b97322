import asyncio
import signal

from django.core.management.base import BaseCommand

from mcp_endpoint.transports.outbound.supervisor import Supervisor


class Command(BaseCommand):
    help = (
        "Keep the outbound MCP endpoints (add_mcp_endpoint) connected, as `serve` does in its own "
        "process: for deployments whose web processes are bare daphne. Runs until stopped; several "
        "may run (with `serve` processes too): each endpoint is held by one of them."
    )

    def handle(self, *args: object, **options: object) -> None:
        async def main() -> None:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, stop.set)
            supervisor = Supervisor()
            await supervisor.start()
            try:
                await stop.wait()
            finally:
                await supervisor.stop()

        self.stderr.write("Outbound MCP endpoints: keeping them connected; Ctrl-C to stop.")
        asyncio.run(main())
