import asyncio
import signal

from django.core.management.base import BaseCommand

from automations.engine.runner import Engine


class Command(BaseCommand):
    help = (
        "Run the automations engine, as `serve` does in its own process: for deployments whose "
        "web processes are bare daphne. Runs until stopped; several may run (with `serve` "
        "processes too): each automation is evaluated by one of them, held by a lease."
    )

    def handle(self, *args: object, **options: object) -> None:
        async def main() -> None:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, stop.set)
            engine = Engine()
            await engine.start()
            try:
                await stop.wait()
            finally:
                await engine.stop()

        self.stderr.write("Automations engine: running them; Ctrl-C to stop.")
        asyncio.run(main())
