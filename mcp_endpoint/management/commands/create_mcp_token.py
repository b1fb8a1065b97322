from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from audit.models import Event
from mcp_endpoint.auth.scopes import scopes as declared_scopes
from mcp_endpoint.auth.tokens import create_token, parse_scopes


class Command(BaseCommand):
    help = "Create an access token for an LLM agent. The token is the last line printed (shown once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="Who or what the token is for (shown in the audit trail).")
        parser.add_argument(
            "--scopes", default="read", help=f"Comma-separated, of {','.join(declared_scopes.names())}."
        )
        parser.add_argument("--owner", help="Username of the person responsible for the token.")
        parser.add_argument("--expires-days", type=float, help="Expire the token after this many days.")

    def handle(
        self,
        *args: object,
        name: str,
        scopes: str,
        owner: str | None = None,
        expires_days: float | None = None,
        **options: object,
    ) -> None:
        try:
            scope_list = parse_scopes(scopes)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if not scope_list:
            raise CommandError("give at least one scope")
        user = None
        if owner:
            user = get_user_model().objects.filter(username=owner).first()
            if user is None:
                raise CommandError(f"no user named {owner!r}")
        expires_at = timezone.now() + timedelta(days=expires_days) if expires_days else None
        token, secret = create_token(
            name,
            scope_list,
            actor="create_mcp_token",
            interface=Event.Interface.SYSTEM,
            owner=user,
            expires_at=expires_at,
        )
        self.stderr.write(
            f"Token {token.name!r} created with scopes {','.join(token.scopes)}"
            + (f", expires {expires_at:%Y-%m-%d %H:%M} UTC" if expires_at else "")
            + ". Keep it secret; it is not shown again:"
        )
        self.stdout.write(secret)
