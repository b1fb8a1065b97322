from django.core.management.base import BaseCommand

from automations.engine.runner import Engine
from common.tasks import run_until_signalled


class Command(BaseCommand):
    help = (
        "Run the automations engine, as `serve` does in its own process: for deployments whose "
        "web processes are bare daphne. Runs until stopped; several may run (with `serve` "
        "processes too): each automation is evaluated by one of them, held by a lease."
    )

    def handle(self, *args: object, **options: object) -> None:
        self.stderr.write("Automations engine: running them; Ctrl-C to stop.")
        run_until_signalled(Engine)
