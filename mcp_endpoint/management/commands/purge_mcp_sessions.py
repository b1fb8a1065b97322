from django.core.management.base import BaseCommand, CommandParser

from common.pruning import parse_age
from mcp_endpoint.transports.http_sessions import purge


class Command(BaseCommand):
    help = (
        "Delete the MCP Streamable HTTP sessions ended or expired longer ago than --grace "
        "(open sessions stay; a client coming back with a deleted one gets 404, as for an ended one)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--grace", default="1d", help="e.g. 1d (the default), 12h, 2w")

    def handle(self, *args: object, grace: str, **options: object) -> None:
        deleted = purge(parse_age(grace))
        self.stdout.write(f"Deleted {deleted} MCP sessions ended or expired more than {grace} ago.")
