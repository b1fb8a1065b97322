from django.core.management.base import BaseCommand

from common.pruning import parse_age
from devices.telemetry.services import prune_telemetry


class Command(BaseCommand):
    help = (
        "Delete telemetry readings measured longer ago than --older-than (each sensor's latest value stays)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--older-than", required=True, help="e.g. 30d, 12h, 2w")

    def handle(self, *args, older_than, **options):
        deleted = prune_telemetry(parse_age(older_than))
        self.stdout.write(f"Deleted {deleted} readings older than {older_than}.")
