"""Household roles: what each dashboard account may do, as named capabilities.

Three roles, each a Django group made by `common`'s migration 0002, each holding every
capability of the role below it: a *guest* sees the home and switches lights; a *member*
also arms and disarms the alarm, marks presence, calls device tools, uses invoices, runs
scenes and reads notifications; an *owner* also decides requests (and reads their notices),
manages devices, sees the audit trail, manages tokens, connected apps and accounts, and writes
scenes and automations. A superuser is an owner; an account in no role's group is a guest,
never more. Every page, form, live socket and REST call made with a session asks `can` here;
nothing else decides.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

GUEST, MEMBER, OWNER = "guest", "member", "owner"
ROLES = (GUEST, MEMBER, OWNER)  # the least first

SEE_HOME = "see_home"  # Home and Sensors pages, read-only REST
SWITCH_LIGHTS = "switch_lights"
ARM_ALARM = "arm_alarm"
MARK_PRESENCE = "mark_presence"
CALL_DEVICE_TOOLS = "call_device_tools"  # the Devices page's tool forms, REST device calls
USE_INVOICES = "use_invoices"  # FEL pages and REST
RUN_SCENES = "run_scenes"
READ_NOTIFICATIONS = (
    "read_notifications"  # the Notifications page and banner (approval notices: DECIDE_REQUESTS)
)
DECIDE_REQUESTS = "decide_requests"  # approve or deny dangerous calls on the Requests page
MANAGE_DEVICES = "manage_devices"  # add a device, unbind one
VIEW_ACTIVITY = "view_activity"  # the audit trail: Activity page, REST events, live audit details
MANAGE_TOKENS = "manage_tokens"
CONNECT_APPS = "connect_apps"  # consent to OAuth apps, Connected apps, revoking grants
MANAGE_ACCOUNTS = "manage_accounts"
CALL_ANY_TOOL = "call_any_tool"  # a tool that no narrower capability names
MANAGE_AUTOMATIONS = "manage_automations"  # create, edit and delete scenes (and automations)

_OWN: dict[str, tuple[str, ...]] = {
    GUEST: (SEE_HOME, SWITCH_LIGHTS),
    MEMBER: (ARM_ALARM, MARK_PRESENCE, CALL_DEVICE_TOOLS, USE_INVOICES, RUN_SCENES, READ_NOTIFICATIONS),
    OWNER: (
        DECIDE_REQUESTS,
        MANAGE_DEVICES,
        VIEW_ACTIVITY,
        MANAGE_TOKENS,
        CONNECT_APPS,
        MANAGE_ACCOUNTS,
        CALL_ANY_TOOL,
        MANAGE_AUTOMATIONS,
    ),
}


def _grants() -> dict[str, frozenset[str]]:
    held: set[str] = set()
    grants = {}
    for role in ROLES:
        held.update(_OWN[role])
        grants[role] = frozenset(held)
    return grants


GRANTS: dict[str, frozenset[str]] = _grants()
CAPABILITIES: tuple[str, ...] = tuple(c for role in ROLES for c in _OWN[role])

# The capability a tool call needs, for deciding a request made by a token (a person may
# approve only what they could do themselves): by tool, else by the tool's scope.
_TOOL_CAPABILITY = {
    "set_light_state": SWITCH_LIGHTS,
    "set_alarm_state": ARM_ALARM,
    "scene_activate": RUN_SCENES,
}
_SCOPE_CAPABILITY = {
    "read": SEE_HOME,
    "control": ARM_ALARM,
    "devices": CALL_DEVICE_TOOLS,
    "fel": USE_INVOICES,
    "automations": MANAGE_AUTOMATIONS,
}

_CACHE = "_homehub_role"  # on the user object: one request's or one socket's account


def role_of(user: Any) -> str | None:
    """The account's role; None for an anonymous visitor or a deactivated account. A
    superuser is an owner; of the role groups an account is in, the highest counts; in none, a
    guest."""
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return None
    cached = getattr(user, _CACHE, None)
    if cached is not None:
        return str(cached)
    names = () if user.is_superuser else user.groups.filter(name__in=ROLES).values_list("name", flat=True)
    role = role_from(superuser=user.is_superuser, groups=names)
    setattr(user, _CACHE, role)
    return role


def role_from(*, superuser: bool, groups: Iterable[str]) -> str:
    """The role of an account that is (or not) a superuser and in these groups."""
    if superuser:
        return OWNER
    held = set(groups) & set(ROLES)
    return max(held, key=ROLES.index) if held else GUEST


def forget(user: Any) -> None:
    """Drop the role remembered on this user object (after its role changed)."""
    if hasattr(user, _CACHE):
        delattr(user, _CACHE)


def capabilities(role: str | None) -> frozenset[str]:
    return GRANTS.get(role or "", frozenset())


def can(user: Any, capability: str) -> bool:
    """Whether `user` may do `capability` (an unknown capability: nobody may)."""
    return capability in capabilities(role_of(user))


def least_role(capability: str) -> str:
    """The least role that may do `capability` (for messages saying which is needed)."""
    return next((role for role in ROLES if capability in GRANTS[role]), OWNER)


def refusal(role: str | None, capability: str) -> str:
    """Why an account of `role` may not do `capability`, in words."""
    return f"This needs the {least_role(capability)} role; your account is a {role or 'visitor'}."


def capability_for_scope(scope: str) -> str:
    """What a session needs for a REST call of `scope` that names no narrower capability: the
    most a member's token-like scope stands for (`control`: the alarm), so a door that forgets
    to name one refuses rather than lets a guest through."""
    return _SCOPE_CAPABILITY.get(scope, CALL_ANY_TOOL)


def scopes_within(role: str | None, scopes: Iterable[str]) -> frozenset[str]:
    """Of `scopes`, those whose capability `role` holds: what a person's session may do when
    one action runs several tool calls (a scene's steps)."""
    held = capabilities(role)
    return frozenset(s for s in scopes if capability_for_scope(s) in held)


def capability_for_tool(tool: str, scope: str | None) -> str:
    """What calling `tool` (of `scope`; None when the hub does not know it now) needs."""
    if tool in _TOOL_CAPABILITY:
        return _TOOL_CAPABILITY[tool]
    return capability_for_scope(scope or "")


def assign(user: Any, role: str) -> None:
    """Put `user` in `role`'s group and out of the other roles' (the group is made if it is
    missing, as after a test database's flush)."""
    from django.contrib.auth.models import Group

    if role not in ROLES:
        raise ValueError(f"Unknown role '{role}'.")
    group, _ = Group.objects.get_or_create(name=role)
    user.groups.remove(*Group.objects.filter(name__in=ROLES).exclude(pk=group.pk))
    user.groups.add(group)
    forget(user)


# An account's live connections (the dashboard's socket) listen on its group, and hear
# ACCOUNT_CHANGED when its role changes or it is deactivated: they close, and the page's
# reconnection finds the new role (or none).
ACCOUNT_CHANGED = "account.changed"  # the channel-layer message type (`account_changed`)


def account_group(user_pk: Any) -> str:
    return f"account.{user_pk}"
