"""The only writers of automations: save (every version kept), restore a version, enable or
disable, delete. Each is one transaction with its audit event, and announces the change so
that the engine holding the automation reloads it.

Who may let an automation run: an owner. An owner's save on the dashboard may enable it at once;
a definition changed by anyone else (a token: an LLM client, a script) disables an enabled
automation until an owner enables it again, since its runs act with the rights of the owner
who enabled it (`Automation.enabled_by`), and that owner approved another definition.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.services import record_event
from automations.announce import announce_automation_change
from automations.automation_selectors import version_definition
from automations.errors import AutomationError, AutomationNotFound
from automations.models import Automation, AutomationVersion
from automations.validation import validate
from common import roles

SAVE, ENABLE, DISABLE, DELETE = (
    "automation.save",
    "automation.enable",
    "automation.disable",
    "automation.delete",
)


def is_owner(user: Any) -> bool:
    return roles.role_of(user) == roles.OWNER


def save_automation(
    data: dict[str, Any],
    *,
    actor: str,
    interface: str,
    scopes: frozenset[str] | None = None,
    user: Any = None,
    enable: bool = False,
) -> Automation:
    """Create or replace the automation named in `data` (DefinitionError naming every problem,
    nothing saved). A changed definition is a new version; made by anyone but an owner
    (`user`), it disables the automation. `enable`: an owner's save that also enables it
    (AutomationError for anyone else)."""
    if enable and not is_owner(user):
        raise AutomationError("Only an owner may enable an automation.")
    definition = validate(data, scopes=scopes).as_json()
    name = definition["name"]
    with transaction.atomic():
        row = Automation.objects.select_for_update().filter(name=name).first()
        before = None if row is None else _summary(row)
        if row is None:
            row = Automation(name=name, definition=definition, version=1)
            changed = True
        else:
            changed = row.definition != definition
            if changed:
                row.definition, row.version, row.state = definition, row.version + 1, {}
        if changed and row.enabled and not is_owner(user):
            _disable(row)
        if enable or (changed and row.enabled):  # an owner's save approves what it saved
            _enable(row, user)
        row.save()
        if changed:
            AutomationVersion.objects.create(
                automation=row,
                number=row.version,
                definition=definition,
                actor=actor[:150],
                interface=interface,
            )
        record_event(
            actor=actor,
            interface=interface,
            action=SAVE,
            target=f"automation:{name}",
            before=before,
            after=_summary(row),
        )
        announce_automation_change(name)
    return row


def restore_version(
    name: str,
    number: int,
    *,
    actor: str,
    interface: str,
    user: Any = None,
    scopes: frozenset[str] | None = None,
) -> Automation:
    """Save version `number` of automation `name` again, as a new version (checked again against
    the home as it is now, and the author's `scopes`, as any save)."""
    found = version_definition(name, number)
    if found is None:
        if not Automation.objects.filter(name=name).exists():
            raise AutomationNotFound(name)
        raise AutomationError(f"Automation '{name}' has no version {number}.")
    return save_automation(dict(found), actor=actor, interface=interface, scopes=scopes, user=user)


def set_enabled(
    name: str, enabled: bool, *, user: Any, actor: str, interface: str, version: int | None = None
) -> Automation:
    """Enable automation `name`, by an owner (`user`, who becomes the one whose rights its runs
    act with; AutomationError for anyone else), or disable it (whoever the door lets write
    automations: disabling only stops runs). `version`: refused when the automation is no
    longer at that version (what the owner approved is not what would run). Enabling checks
    the definition again against the home as it is now."""
    if enabled and not is_owner(user):
        raise AutomationError("Only an owner may enable an automation.")
    with transaction.atomic():
        row = Automation.objects.select_for_update().filter(name=name).first()
        if row is None:
            raise AutomationNotFound(name)
        if version is not None and row.version != version:
            raise AutomationError(
                f"Automation '{name}' is at version {row.version} now, not {version}: look at it again."
            )
        if enabled:
            validate(row.definition)
        before = _summary(row)
        if enabled:
            _enable(row, user)
        else:
            _disable(row)
        row.save()
        record_event(
            actor=actor,
            interface=interface,
            action=ENABLE if enabled else DISABLE,
            target=f"automation:{name}",
            before=before,
            after=_summary(row),
        )
        announce_automation_change(name)
    return row


def delete_automation(name: str, *, actor: str, interface: str) -> None:
    """Delete automation `name` with its versions and runs (the audit trail keeps the last
    definition)."""
    with transaction.atomic():
        row = Automation.objects.select_for_update().filter(name=name).first()
        if row is None:
            raise AutomationNotFound(name)
        before = {**_summary(row), "definition": row.definition}
        row.delete()
        record_event(
            actor=actor, interface=interface, action=DELETE, target=f"automation:{name}", before=before
        )
        announce_automation_change(name)


def _enable(row: Automation, user: Any) -> None:
    row.enabled, row.enabled_by, row.enabled_at = True, user, timezone.now()


def _disable(row: Automation) -> None:
    row.enabled, row.enabled_by, row.enabled_at = False, None, None


def _summary(row: Automation) -> dict[str, Any]:
    """What an audit event keeps of an automation (the definition's versions are kept apart)."""
    return {
        "version": row.version,
        "enabled": row.enabled,
        "enabled_by": row.enabled_by.get_username() if row.enabled_by is not None else None,
    }
