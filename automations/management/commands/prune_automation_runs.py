from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand

from automations.engine.services import prune_runs


class Command(BaseCommand):
    help = (
        "Delete automation runs older than AUTOMATION_RUNS_KEEP_DAYS days and beyond the newest "
        "AUTOMATION_RUNS_KEEP of each automation, in short transactions."
    )

    def handle(self, *args: object, **options: object) -> None:
        deleted = prune_runs(
            timedelta(days=settings.AUTOMATION_RUNS_KEEP_DAYS), settings.AUTOMATION_RUNS_KEEP
        )
        self.stdout.write(f"Deleted {deleted} automation runs.")
