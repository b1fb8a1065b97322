import json
import sys

from django.core.management.base import BaseCommand

from devices.mqtt import status


class Command(BaseCommand):
    help = (
        "The MQTT workers' health probe, for a monitor or a container HEALTHCHECK: exit status 0 "
        "when the worker (--client-id; default: any) reported within the last minute, holds its "
        "broker link and every subscription delivers (none refused, every delivery probe back), "
        "else 1. Prints what it found as JSON. /healthz?full=1 asks the same of every worker."
    )

    def add_arguments(self, parser):
        parser.add_argument("--client-id", help="the worker to ask about (default: any running worker)")

    def handle(self, *args, client_id=None, **options):
        result = status.health(client_id)
        self.stdout.write(json.dumps(result, default=str))
        if not result["ok"]:
            sys.exit(1)
