"""The tool catalogue: the owner's settings of every tool (enabled, a description of their
own, a confirmation mark, whether the client's own confirmation is enough), kept in
`ToolSetting` rows and applied by each process's registry.

The registry never reads the database: each process holds the settings in memory
(`registry.apply_settings`), loaded when it starts serving (`watcher`, a starter of
`registry.start`), and again whenever any process announces a change on the channel layer
(`announce_change`, in the edit's transaction) or, in case an announcement was lost, every
FULL_RELOAD_SECONDS. A reload that changes the settings tells this process's sessions
(`notifications/tools/list_changed`). Only rows that change something are loaded: a
catalogue of a thousand untouched device tools costs nothing per tools/list.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from asgiref.sync import sync_to_async
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from common.feed import announce
from common.groups import ProcessChannel
from common.tasks import StartOnce, Tasks
from mcp_endpoint.engine.registry import ToolSettings, registry
from mcp_endpoint.models import ToolSetting

logger = logging.getLogger(__name__)

GROUP = "mcp.tool_settings"
CHANGED = "tool_settings.changed"
FULL_RELOAD_SECONDS = 60.0


# --- the settings each process applies ------------------------------------------------------


def load() -> dict[str, ToolSettings]:
    """The settings of the tools whose rows change something, by tool name."""
    rows = ToolSetting.objects.filter(
        Q(enabled=False) | ~Q(description="") | Q(needs_confirmation=True) | Q(client_confirms=True)
    ).values_list("name", "enabled", "description", "needs_confirmation", "client_confirms")
    return {
        name: ToolSettings(
            enabled=enabled, description=description, needs_confirmation=confirm, client_confirms=client
        )
        for name, enabled, description, confirm, client in rows
    }


def reload() -> bool:
    """Apply the settings in the database to this process's registry; if they changed, tell
    its sessions. Whether they changed."""
    settings = load()
    if settings == registry.settings():
        return False
    registry.apply_settings(settings)
    registry.notify_changed()
    return True


def announce_change() -> None:
    """Called in the transaction of a change to the catalogue: once it commits, this process
    applies it at once and every other hears it (`watcher`)."""
    announce(GROUP, {"type": CHANGED})
    transaction.on_commit(reload)


class SettingsWatcher:
    """Loads the settings when the process starts serving, and reloads them when told."""

    def __init__(self) -> None:
        self._started = StartOnce(self._start)
        self._changes = ProcessChannel(self._heard, "tool catalogue", (GROUP,))
        self._tasks = Tasks("tool catalogue")

    async def start(self) -> None:
        """Once per process (and event loop); again after a failed start (the database was
        down), as the device gateway does."""
        await self._started()

    async def _start(self) -> None:
        await self._changes.open()  # before reading: no change is missed in between
        await sync_to_async(reload)()
        self._tasks.cancel()  # that of an earlier start went with its loop
        self._tasks = Tasks("tool catalogue")
        self._tasks.spawn(self._reload_now_and_then())

    async def _heard(self, message: dict[str, Any]) -> None:
        if message.get("type") == CHANGED:
            await self._reload()

    async def _reload_now_and_then(self) -> None:
        while True:
            await asyncio.sleep(FULL_RELOAD_SECONDS)
            await self._reload()

    async def _reload(self) -> None:
        try:
            await sync_to_async(reload)()
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("tool catalogue: could not reload the tools' settings")


watcher = SettingsWatcher()


# --- the catalogue's rows ---------------------------------------------------------------------


def record_offered_tools() -> set[str]:
    """Make or refresh a row for every tool the registry offers now (what is known of it: its
    title, own description, scope, annotations and source), so that the catalogue lists them
    all, and keeps a device's tools while the device is away. The names offered now."""
    now = timezone.now()
    rows = [
        ToolSetting(
            name=tool.name,
            title=(tool.title or "")[:200],
            own_description=tool.description,
            scope=tool.scope,
            annotations=tool.annotations,
            source=tool.source[:200],
            last_offered_at=now,
        )
        for tool in registry.all_tools()
    ]
    ToolSetting.objects.bulk_create(
        rows,
        batch_size=500,
        update_conflicts=True,
        unique_fields=["name"],
        update_fields=["title", "own_description", "scope", "annotations", "source", "last_offered_at"],
    )
    return {row.name for row in rows}


def offered_now(name: str) -> bool:
    """Whether this process's registry offers the tool `name` now, enabled or not."""
    return registry.get_declared(name) is not None
