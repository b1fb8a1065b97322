import asyncio
import logging
import signal

from django.core.management.base import BaseCommand, CommandError

from common.mqtt.connection import BrokerConfig, BrokerConfigError
from devices.mqtt.watchdog import keep_alive
from devices.mqtt.worker import Worker, run_until


class Command(BaseCommand):
    help = (
        "Run the MQTT worker: telemetry ingestion (office/...), MCP over MQTT for agents "
        "(mcp/...), and the home's state out / commands in (homehub/...). Runs until stopped; "
        "a lost broker is retried, never fatal."
    )

    def add_arguments(self, parser):
        parser.add_argument("--url", help="the broker (default: MQTT_URL)")
        parser.add_argument("--client-id", help="this worker's fixed client id (default: MQTT_CLIENT_ID)")
        parser.add_argument(
            "--shared-group", help="split the load with other workers (default: MQTT_SHARED_GROUP)"
        )

    def handle(self, *args, url=None, client_id=None, shared_group=None, **options):
        logging.getLogger("devices.mqtt").setLevel(logging.INFO)
        try:
            config = BrokerConfig.from_settings(client_id=client_id, url=url)
            worker = Worker(config, shared_group=shared_group)
        except BrokerConfigError as exc:
            raise CommandError(str(exc)) from None

        async def main() -> None:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, stop.set)
            watchdog = asyncio.ensure_future(keep_alive(worker.alive))
            try:
                await run_until(stop, worker)
            finally:
                watchdog.cancel()

        self.stderr.write(f"MQTT worker {config.client_id} for {config.address}; Ctrl-C to stop.")
        asyncio.run(main())
