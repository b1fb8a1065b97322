from __future__ import annotations

import asyncio
import logging
import sys
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from common.mqtt.connection import BrokerConfig, BrokerConfigError
from homehub.admin_login import exposure_notice

if TYPE_CHECKING:
    from homehub.demo.runner import Demo


class Command(BaseCommand):
    help = (
        "Serve the hub with daphne (HTTP, WebSockets, /mcp) and, unless MQTT_IN_PROCESS=0, the "
        "MQTT worker in the same process, so that with the in-memory channel layer LLM calls "
        "still reach MQTT agents. With no broker reachable the hub serves everything else and "
        "keeps retrying. The outbound MCP endpoints (add_mcp_endpoint) are kept connected, and the "
        "automations run unless AUTOMATIONS_IN_PROCESS=0, and so does the tasks worker (FEL "
        "batches) unless TASKS_IN_PROCESS=0. With "
        "DEVICE_MQTT_ENDPOINT set, also the device listener, where stock xiaozhi devices in MQTT "
        "mode connect."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-mqtt", action="store_true", help="do not run the MQTT worker here")
        parser.add_argument("--access-log", action="store_true", help="log every request to stdout")
        parser.add_argument(
            "--demo",
            action="store_true",
            help="also run simulated ESP32 agents (WebSocket and MQTT) with a living home climate",
        )

    def handle(self, *args, host, port, no_mqtt, access_log, demo, **options):
        if not demo:
            self._serve(host, port, no_mqtt=no_mqtt, access_log=access_log)
            return
        from homehub.demo.runner import Demo

        demo_mode = Demo(host, port)
        try:  # whatever happens, the demo's private broker goes too
            try:
                banner = demo_mode.prepare()
            except DatabaseError as exc:
                raise CommandError(f"{exc}: run `python manage.py migrate` first (make demo does)") from None
            self.stdout.write(banner)
            self.stdout.flush()
            self._serve(host, port, no_mqtt=no_mqtt, access_log=access_log, demo=demo_mode)
        finally:
            demo_mode.close()

    def _serve(
        self, host: str, port: int, *, no_mqtt: bool, access_log: bool, demo: Demo | None = None
    ) -> None:
        # Daphne installs Twisted's asyncio reactor when imported: import it here, not at the top.
        from daphne.access import AccessLogGenerator
        from daphne.endpoints import build_endpoint_description_strings
        from daphne.server import Server
        from twisted.internet import defer, reactor

        from homehub.asgi import application, before_stop, servers_to_stop
        from mcp_endpoint.engine.registry import registry
        from mcp_endpoint.transports.outbound.supervisor import Supervisor

        mqtt_url = demo.broker.url if demo and demo.broker.url else settings.MQTT_URL

        worker = None
        if settings.MQTT_IN_PROCESS and not no_mqtt:
            from devices.mqtt.worker import Worker

            try:
                worker = Worker(BrokerConfig.from_settings(url=mqtt_url))
            except BrokerConfigError as exc:
                raise CommandError(str(exc)) from None
            logging.getLogger("devices.mqtt").setLevel(logging.INFO)

        endpoints = Supervisor()  # the outbound MCP endpoints, let go on the shutdown path
        before_stop.append(endpoints.stop)
        engine = None
        if settings.AUTOMATIONS_IN_PROCESS:
            from automations.engine.runner import Engine

            engine = Engine()  # the automations, let go on the shutdown path
            before_stop.append(engine.stop)
        tasks = None
        if settings.TASKS_IN_PROCESS:
            from homehub.tasks_worker import TasksWorker

            tasks = TasksWorker()
            worker_of_tasks = tasks

            async def stop_tasks() -> None:  # no new task on the shutdown path
                worker_of_tasks.stop()

            before_stop.append(stop_tasks)
        from devices.xiaozhi.mqtt.credentials import EndpointError
        from devices.xiaozhi.mqtt.listener import DeviceListener

        try:
            devices = DeviceListener.from_settings()
        except EndpointError as exc:
            raise CommandError(str(exc)) from None

        def ready() -> None:
            loop = asyncio.get_event_loop()
            loop.call_soon(lambda: asyncio.ensure_future(registry.start()))
            loop.call_soon(lambda: asyncio.ensure_future(endpoints.start()))
            if engine is not None:
                loop.call_soon(lambda: asyncio.ensure_future(engine.start()))
            if tasks is not None:
                tasks.start()
            if worker is not None:
                loop.call_soon(lambda: asyncio.ensure_future(worker.start()))
                stop_worker = lambda: defer.Deferred.fromFuture(asyncio.ensure_future(worker.stop()))  # noqa: E731
                reactor.addSystemEventTrigger("before", "shutdown", stop_worker)  # type: ignore[arg-type]
            if devices is not None:
                loop.call_soon(lambda: asyncio.ensure_future(devices.start()))
                servers_to_stop.append(devices.stop)  # once its devices are recorded offline
            if demo is not None:
                loop.call_soon(demo.start)
                stop_demo = lambda: defer.Deferred.fromFuture(asyncio.ensure_future(demo.stop()))  # noqa: E731
                reactor.addSystemEventTrigger("before", "shutdown", stop_demo)  # type: ignore[arg-type]

        self.stderr.write(exposure_notice(host, port))
        self.stderr.write(
            f"HomeHub on http://{host}:{port}/"
            + (
                f" with the MQTT worker: broker {worker.config.address}, client id {worker.config.client_id}"
                if worker
                else " (no MQTT worker here)"
            )
            + (f"; devices' MQTT on {devices.address}" if devices else "")
            + ("; the tasks worker" if tasks else "; no tasks worker here")
        )
        Server(
            application=application,
            endpoints=build_endpoint_description_strings(host=host, port=port),
            action_logger=AccessLogGenerator(sys.stdout) if access_log else None,
            ready_callable=ready,
        ).run()
