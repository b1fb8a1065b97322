from django.conf import settings
from django.core.management.base import BaseCommand

from audit.services import prune_events
from common.pruning import parse_age


class Command(BaseCommand):
    help = (
        "Delete audit events older than --older-than (default: AUDIT_RETENTION_DAYS days), "
        "in short transactions."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--older-than",
            default=f"{settings.AUDIT_RETENTION_DAYS}d",
            help="e.g. 90d, 12w (default: AUDIT_RETENTION_DAYS days, %(default)s)",
        )

    def handle(self, *args, older_than, **options):
        deleted = prune_events(parse_age(older_than))
        self.stdout.write(f"Deleted {deleted} audit events older than {older_than}.")
