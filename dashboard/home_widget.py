"""The home inside the LLM's window: an MCP Apps view (`ui://homehub/home`, see
`mcp_endpoint.engine.ui_extension`) that a host such as Claude, ChatGPT, VS Code or Cursor
shows when the model calls `show_home`. The view is one self-contained HTML document
(`home_widget.html`: inline script and style, no outside loads); what it shows comes from
`show_home`'s result, and its buttons call the home's tools through the host, so every
click goes through the hub's one pipeline: the token's scopes, its rate limit, the audit
trail and, for disarming, the owner's approval on the hub."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from typing_extensions import TypedDict

from audit.changes import CHANGE_EVENT, CHANGES_GROUP
from automations import selectors as rooms
from automations.schemas import RoomContents, RoomOut
from devices.home import selectors as home
from devices.home.schemas import AlarmStatusOut, PresenceOut
from mcp_endpoint.engine.providers import Resource, ResourceContents, ResourceNotFound, ResourceTemplate
from mcp_endpoint.engine.ui_extension import UI_MIME_TYPE

HOME_VIEW = "ui://homehub/home"
DOCUMENT = Path(__file__).with_name("home_widget.html")


class HomeViewOut(TypedDict):
    rooms: list[RoomOut]
    elsewhere: RoomContents  # what belongs to no room
    alarm: AlarmStatusOut
    presence: PresenceOut


def home_view() -> HomeViewOut:
    """What the view shows: the rooms with their lights, latest values and devices, the
    alarm and who is home."""
    by_room = rooms.rooms()
    return {
        "rooms": by_room["rooms"],
        "elsewhere": by_room["elsewhere"],
        "alarm": home.get_alarm_status(),
        "presence": home.get_presence(),
    }


@cache
def document() -> str:
    """The view's HTML (read once: it changes only with the code)."""
    return DOCUMENT.read_text(encoding="utf-8")


class HomeViewResource:
    """The view as an MCP resource, for every token that may read the home."""

    scope = "read"
    change_group = CHANGES_GROUP
    change_type = CHANGE_EVENT

    def list_resources(self) -> list[Resource]:
        return [
            Resource(
                HOME_VIEW,
                "home-view",
                "The home as an interactive view (MCP Apps): rooms, lights, the alarm and the "
                "latest values; shown by hosts with the results of show_home",
                mime_type=UI_MIME_TYPE,
            )
        ]

    def templates(self) -> list[ResourceTemplate]:
        return []

    def handles(self, uri: str) -> bool:
        return uri == HOME_VIEW

    def read(self, uri: str) -> ResourceContents:
        if uri != HOME_VIEW:
            raise ResourceNotFound(uri)
        # No outside origin at all (the host's strictest default CSP), inside the host's border.
        return ResourceContents(UI_MIME_TYPE, text=document(), meta={"ui": {"prefersBorder": True}})

    def uris_for_event(self, event: dict[str, Any]) -> list[str]:
        return []  # the document is the same whatever the home does; its data comes from tools
