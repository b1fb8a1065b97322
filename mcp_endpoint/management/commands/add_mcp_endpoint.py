import sys
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.models import Event
from mcp_endpoint.auth.scopes import scopes as declared_scopes
from mcp_endpoint.transports.outbound.endpoint_urls import mask_url
from mcp_endpoint.transports.outbound.endpoints import save_endpoint, tools_not_served

DEFAULT_SCOPES = "read,control"


class Command(BaseCommand):
    stealth_options = ("stdin",)  # where `-` reads the URL from (as Django's createsuperuser)
    help = (
        "Add an outbound MCP endpoint (a xiaozhi `wss://…/mcp/?token=…` URL), or change the one of "
        "that name: `serve` connects to it and serves its voice assistant the chosen tools. The "
        "URL holds a secret: give `-` to read it from stdin (kept out of the shell's history)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="The endpoint's name (the actor of its calls in the audit trail).")
        parser.add_argument("url", help="The endpoint URL, or - to read it from stdin.")
        parser.add_argument(
            "--scopes",
            default=DEFAULT_SCOPES,
            help=f"Comma-separated, of {','.join(declared_scopes.names())} (default: %(default)s).",
        )
        parser.add_argument(
            "--tools",
            help="Comma-separated names of the only tools the endpoint sees (default: "
            "MCP_ENDPOINT_DEFAULT_TOOLS, a small set for voice: lights, alarm, presence, sensors).",
        )
        parser.add_argument("--disabled", action="store_true", help="Save it without connecting.")

    def handle(
        self,
        *args: object,
        name: str,
        url: str,
        scopes: str,
        tools: str | None = None,
        disabled: bool = False,
        **options: Any,
    ) -> None:
        if url == "-":
            url = (options.get("stdin") or sys.stdin).readline().strip()
        chosen = tools if tools is not None else ",".join(settings.MCP_ENDPOINT_DEFAULT_TOOLS)
        try:
            endpoint, created = save_endpoint(
                name,
                url,
                scopes=scopes,
                tools=chosen,
                actor="add_mcp_endpoint",
                interface=Event.Interface.SYSTEM,
                enabled=not disabled,
            )
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        missing, out_of_scope = tools_not_served(endpoint.tools, endpoint.scopes)
        if missing:
            self.stderr.write(
                f"Note: no tool is named {', '.join(missing)} now (a device's tools appear while it "
                "is connected)."
            )
        if out_of_scope:
            self.stderr.write(
                f"Note: {', '.join(out_of_scope)} need a scope the endpoint lacks: it will not see them."
            )
        state = "saved, disabled" if disabled else "`serve` keeps it connected"
        self.stdout.write(
            f"Endpoint {endpoint.name!r} {'added' if created else 'changed'} ({mask_url(endpoint.url)}): "
            f"scopes {','.join(endpoint.scopes)}; tools {','.join(endpoint.tools) or '(none)'}; {state}."
        )
