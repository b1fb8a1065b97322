import asyncio
import contextlib
import getpass
import logging
import sys

from django.conf import settings
from django.core import checks
from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_endpoint.auth.scopes import scopes as declared_scopes
from mcp_endpoint.engine.registry import registry
from mcp_endpoint.engine.tools import Caller
from mcp_endpoint.transports.simple import serve_simple
from mcp_endpoint.transports.stdio import serve_stdio

logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = (
        "Serve MCP over stdio: JSON-RPC 2.0, one message per line (default), or seed 000's "
        "simplified line protocol with --protocol simple. Logs go to stderr."
    )
    # The checks of what a stdio session runs. Not those of what it never serves (the URL
    # configuration, whose import builds every REST route: about 140 ms of CPU at every start,
    # which the client waits for), nor the admin's, static files' or the commands': `serve`,
    # daphne and `manage.py check` check those.
    requires_system_checks = [
        checks.Tags.async_support,
        checks.Tags.caches,
        checks.Tags.compatibility,
        checks.Tags.files,
        checks.Tags.models,
        checks.Tags.security,
        checks.Tags.signals,
        checks.Tags.templates,
        checks.Tags.translation,
    ]

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--protocol", choices=["jsonrpc", "simple"], default="jsonrpc")
        parser.add_argument(
            "--scopes",
            default=",".join(declared_scopes.names()),
            help="Comma-separated scopes this server grants (default: all of %(default)s).",
        )

    def handle(self, *args: object, protocol: str = "jsonrpc", scopes: str = "", **options: object) -> None:
        granted = frozenset(s.strip() for s in scopes.split(",") if s.strip())
        unknown = {s for s in granted if s not in declared_scopes}
        if unknown:
            raise CommandError(f"unknown scope(s): {', '.join(sorted(unknown))}")
        caller = Caller(actor=f"{getpass.getuser()}@stdio", interface="mcp-stdio", scopes=granted)
        serve = serve_simple if protocol == "simple" else serve_stdio

        async def main() -> None:
            try:  # the devices connected to the serving process, as it offers them
                await registry.start()
            except Exception:
                logger.exception("mcp_stdio: device tools are unavailable (their view did not load)")
            await serve(caller, sys.stdin.buffer, sys.stdout.buffer, settings.MCP_MAX_MESSAGE_BYTES)

        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(main())
