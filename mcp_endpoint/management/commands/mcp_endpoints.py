from django.core.management.base import BaseCommand

from common.tasks import run_until_signalled
from mcp_endpoint.transports.outbound.supervisor import Supervisor


class Command(BaseCommand):
    help = (
        "Keep the outbound MCP endpoints (add_mcp_endpoint) connected, as `serve` does in its own "
        "process: for deployments whose web processes are bare daphne. Runs until stopped; several "
        "may run (with `serve` processes too): each endpoint is held by one of them."
    )

    def handle(self, *args: object, **options: object) -> None:
        self.stderr.write("Outbound MCP endpoints: keeping them connected; Ctrl-C to stop.")
        run_until_signalled(Supervisor)
