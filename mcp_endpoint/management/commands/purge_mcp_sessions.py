from django.core.management.base import BaseCommand

from common.pruning import parse_age
from mcp_endpoint.http_sessions import purge


class Command(BaseCommand):
    help = (
        "Delete the MCP Streamable HTTP sessions ended or expired longer ago than --grace "
        "(open sessions stay; a client coming back with a deleted one gets 404, as for an ended one)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--grace", default="1d", help="e.g. 1d (the default), 12h, 2w")

    def handle(self, *args, grace, **options):
        deleted = purge(parse_age(grace))
        self.stdout.write(f"Deleted {deleted} MCP sessions ended or expired more than {grace} ago.")
