"""`/ws/home/`: live updates for the dashboard's pages (logged-in accounts only), each account
hearing only what its household role may see (`common.roles`).

Joins the channel layer's home group, where `devices.services` announce every change, and
forwards each `home.event` the role may see to the browser as one JSON text frame (without
who made it and through which door unless the role may read the audit trail); for a role that
decides requests, the group where the requests waiting for a person's confirmation change
(`{"type": "requests"}`: the page re-reads its banner and, on the Requests page, its lists);
for a role that reads notifications, the group where they come and go (`{"type":
"notifications"}`, the same way; approval notices only to a role that decides requests);
and the account's own group, where a change of its role or its deactivation closes the socket
(the page reconnects and gets its new role's view, or is refused). The browser sends only
pings: nothing it sends changes anything.
"""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from audit.changes import CHANGES_GROUP
from automations.notifications.services import NOTIFICATIONS_GROUP
from common import roles
from mcp_endpoint.controls.confirmation import REQUESTS_GROUP
from mcp_endpoint.engine import jsonrpc

UNAUTHORIZED = 4401
ACCOUNT_CHANGED = 4000  # the account's role changed or it was deactivated: reconnect

# What a change of each kind needs to be seen; any other kind, the audit trail's reader.
KIND_NEEDS = {
    **dict.fromkeys(["light", "alarm", "person", "home", "telemetry", "agent"], roles.SEE_HOME),
    **dict.fromkeys(["invoice", "fel_batch"], roles.USE_INVOICES),
}
AUDIT_FIELDS = frozenset({"actor", "interface", "action", "target", "at", "method"})


def visible_event(event: dict[str, Any], role: str | None) -> dict[str, Any] | None:
    """`event` as an account of `role` may see it: None when it may not, without its audit
    details (who, through which door, what exactly) unless it may read the audit trail."""
    may = roles.capabilities(role)
    if KIND_NEEDS.get(str(event.get("kind")), roles.VIEW_ACTIVITY) not in may:
        return None
    if roles.VIEW_ACTIVITY in may:
        return event
    return {key: value for key, value in event.items() if key not in AUDIT_FIELDS}


def groups_for(role: str, user_pk: Any) -> list[str]:
    groups = [CHANGES_GROUP, roles.account_group(user_pk)]
    if roles.DECIDE_REQUESTS in roles.capabilities(role):
        groups.append(REQUESTS_GROUP)
    if roles.READ_NOTIFICATIONS in roles.capabilities(role):
        groups.append(NOTIFICATIONS_GROUP)
    return groups


class HomeConsumer(AsyncJsonWebsocketConsumer):
    joined: list[str] = []
    role: str | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        role = await database_sync_to_async(roles.role_of)(user)
        if user is None or role is None:
            await self.close(code=UNAUTHORIZED)
            return
        self.role = role
        self.joined = groups_for(role, user.pk)
        for group in self.joined:
            await self.channel_layer.group_add(group, self.channel_name)
        await self.accept()
        await self.send_json({"type": "hello", "user": user.get_username(), "role": role})

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        """A frame that is not JSON text is ignored (Channels' own would end the socket)."""
        try:
            content = jsonrpc.loads(text_data) if text_data is not None else None
        except ValueError:
            return
        await self.receive_json(content)

    async def disconnect(self, code: int) -> None:
        if self.joined:
            for group in self.joined:
                await self.channel_layer.group_discard(group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"type": "pong"})

    async def home_event(self, message: dict[str, Any]) -> None:
        event = visible_event(message.get("event") or {}, self.role)
        if event is not None:
            await self.send_json({"type": "event", "event": event})

    async def requests_changed(self, message: dict[str, Any]) -> None:
        if roles.DECIDE_REQUESTS in roles.capabilities(self.role):
            await self.send_json({"type": "requests"})

    async def notifications_changed(self, message: dict[str, Any]) -> None:
        may = roles.capabilities(self.role)
        if roles.READ_NOTIFICATIONS in may and (
            not message.get("owners_only") or roles.DECIDE_REQUESTS in may
        ):
            await self.send_json({"type": "notifications"})

    async def account_changed(self, message: dict[str, Any]) -> None:
        await self.close(code=ACCOUNT_CHANGED)
