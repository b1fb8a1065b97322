import re
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError

from devices.telemetry_services import prune_telemetry

UNITS = {"d": "days", "h": "hours", "m": "minutes", "w": "weeks"}


def parse_age(text: str) -> timedelta:
    match = re.fullmatch(r"\s*(\d+)\s*([wdhm])\s*", text)
    if not match:
        raise CommandError(f"an age is a number and a unit (w, d, h, m), e.g. 30d, not {text!r}")
    return timedelta(**{UNITS[match.group(2)]: int(match.group(1))})


class Command(BaseCommand):
    help = (
        "Delete telemetry readings measured longer ago than --older-than (each sensor's latest value stays)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--older-than", required=True, help="e.g. 30d, 12h, 2w")

    def handle(self, *args, older_than, **options):
        deleted = prune_telemetry(parse_age(older_than))
        self.stdout.write(f"Deleted {deleted} readings older than {older_than}.")
