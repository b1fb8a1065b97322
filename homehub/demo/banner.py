"""What the demo prints at start: where to look, how to log in, how to connect an MCP client."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model

from devices.agents.models import Agent
from homehub.admin_login import kept_password_file
from homehub.demo.automations import Seeded
from homehub.demo.broker import DemoBroker
from homehub.demo.catalogue import DemoAgent


def login() -> str:
    """The first superuser and, when `ensure_admin` chose it, where its password is."""
    user = get_user_model().objects.filter(is_superuser=True).order_by("pk").first()
    if user is None:
        return "no account: run `python manage.py ensure_admin`"
    kept = kept_password_file()
    if "HOMEHUB_ADMIN_PASSWORD" in os.environ:
        return f"{user.get_username()} / the password in $HOMEHUB_ADMIN_PASSWORD"
    if kept:
        return f"{user.get_username()} / {kept.read_text().strip()}  (kept in {kept})"
    return f"{user.get_username()} / your password"


def client_configs(base: str, token: str) -> dict[str, dict]:
    """`mcpServers` entries for a client that starts the hub itself (stdio) and for one
    that connects to this running hub (Streamable HTTP)."""
    stdio: dict = {
        "command": sys.executable,
        "args": [str(Path(settings.BASE_DIR) / "manage.py"), "mcp_stdio"],
    }
    if os.environ.get("DATABASE_URL"):
        stdio["env"] = {"DATABASE_URL": os.environ["DATABASE_URL"]}
    http = {"type": "http", "url": f"{base}/mcp", "headers": {"Authorization": f"Bearer {token}"}}
    return {"stdio": {"mcpServers": {"homehub": stdio}}, "http": {"mcpServers": {"homehub-demo": http}}}


def automation_lines(base: str, seeded: Seeded) -> list[str]:
    """Which automations the demo ships, who enabled them, and any it skipped with why."""
    enabled = (
        f"enabled by {seeded.owner}" if seeded.owner else "disabled: no owner account to enable them yet"
    )
    lines = [f"  Automations: {', '.join(seeded.names)} ({enabled}; yours to edit at {base}/automations/)"]
    return lines + [f"               skipped {skipped}" for skipped in seeded.skipped]


def banner(base: str, token: str, broker: DemoBroker, agents: list[DemoAgent], automations: Seeded) -> str:
    ws = [a.agent_id for a in agents if a.transport == Agent.Transport.WS]
    mqtt = [a.agent_id for a in agents if a.transport == Agent.Transport.MQTT]
    if broker.url:
        over_mqtt = f"MQTT agents {', '.join(mqtt)} on {broker.url} ({broker.how})"
    else:
        over_mqtt = (
            f"no MQTT agents: {broker.how}; the WebSocket agents only, their rooms' readings stored directly"
        )
    configs = client_configs(base, token)
    return "\n".join(
        [
            "",
            "HomeHub demo",
            f"  Dashboard:   {base}/   (log in as {login()})",
            f"  Agents:      WebSocket devices {', '.join(ws)}; {over_mqtt}",
            *automation_lines(base, automations),
            f"  MCP token:   {token}   (all scopes; a new one at every start)",
            "  MCP client over Streamable HTTP (an `mcpServers` entry for Claude Code, Cursor...):",
            "    " + json.dumps(configs["http"]),
            f"    npx @modelcontextprotocol/inspector --cli {base}/mcp --transport http"
            f' --header "Authorization: Bearer {token}" --method tools/list',
            "  MCP client over stdio (Claude Desktop...; it starts its own hub process: home and sensors;",
            "  the demo's device tools need the HTTP endpoint above, or REDIS_URL for both):",
            "    " + json.dumps(configs["stdio"]),
            "  Ctrl-C stops everything.",
            "",
        ]
    )
