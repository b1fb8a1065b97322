from django.core.management.base import BaseCommand

from mcp_endpoint.services import prune_expired_tasks


class Command(BaseCommand):
    help = (
        "Delete the tasks of the MCP tasks extension past their TTL (MCP_TASK_TTL_SECONDS), which "
        "tasks/get already answers as unknown; run daily by deploy/systemd."
    )

    def handle(self, *args: object, **options: object) -> None:
        deleted = prune_expired_tasks()
        self.stdout.write(f"Deleted {deleted} expired MCP tasks.")
