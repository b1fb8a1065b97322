"""The household's accounts as the Accounts page changes them: add one with a role, change an
account's role, deactivate one. Each change is one transaction with its audit event (interface
`dashboard`, the owner who made it as actor) and, once committed, tells the account's open
live sockets to reconnect under their new role (`common.roles.ACCOUNT_CHANGED`).

The hub always keeps an active owner: a change that would leave none is refused, and nobody
deactivates their own account. Changes are serialized on the owner group's row (locked first),
so two owners demoting each other at once cannot both succeed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import Group, User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils.translation import gettext

from audit.models import Event
from audit.services import record_event
from common import roles
from common.feed import announce

DASHBOARD = Event.Interface.DASHBOARD


class AccountError(Exception):
    """A change refused, with what to tell the owner."""


@dataclass(frozen=True)
class AccountRow:
    username: str
    role: str
    active: bool
    superuser: bool
    last_login: datetime | None


def account_rows() -> list[AccountRow]:
    """Every account with its role (a deactivated one's role as it was), by username."""
    rows = []
    for user in User.objects.order_by("username").prefetch_related("groups"):
        role = roles.role_from(superuser=user.is_superuser, groups=(g.name for g in user.groups.all()))
        rows.append(AccountRow(user.get_username(), role, user.is_active, user.is_superuser, user.last_login))
    return rows


def _target(username: str) -> str:
    return f"account:{username}"[:200]


def _serialized() -> None:
    """Lock the owner group's row: account changes wait for each other (call in a transaction)."""
    Group.objects.select_for_update().get_or_create(name=roles.OWNER)


def _active_owners() -> int:
    owners = Q(is_superuser=True) | Q(groups__name=roles.OWNER)
    return User.objects.filter(owners, is_active=True).distinct().count()


def _account(username: str) -> User:
    user = User.objects.filter(username=username).first()
    if user is None:
        raise AccountError(gettext("There is no account '%(name)s'.") % {"name": username})
    return user


def _tell_sockets(user: User) -> None:
    announce(roles.account_group(user.pk), {"type": roles.ACCOUNT_CHANGED})


def create_account(username: str, password: str, role: str, *, by: str) -> User:
    """A new active account of `role`; its username and password checked as Django's settings
    say (`AUTH_PASSWORD_VALIDATORS`)."""
    if role not in roles.ROLES:
        raise AccountError(gettext("Unknown role '%(role)s'.") % {"role": role})
    candidate = User(username=username)
    try:
        candidate.clean_fields(exclude=["password"])
        validate_password(password, user=candidate)
    except ValidationError as invalid:
        raise AccountError(" ".join(invalid.messages)) from None
    taken = AccountError(gettext("The username '%(name)s' is taken.") % {"name": username})
    if User.objects.filter(username=username).exists():
        raise taken
    try:
        with transaction.atomic():
            user = User.objects.create_user(username, password=password)
            roles.assign(user, role)
            record_event(
                actor=by,
                interface=DASHBOARD,
                action="account.create",
                target=_target(username),
                after={"role": role},
            )
    except IntegrityError:  # made by another request since the check
        raise taken from None
    return user


def change_role(username: str, role: str, *, by: str) -> bool:
    """Give the account `role`; False when it had it already."""
    if role not in roles.ROLES:
        raise AccountError(gettext("Unknown role '%(role)s'.") % {"role": role})
    with transaction.atomic():
        _serialized()
        user = _account(username)
        if user.is_superuser:
            raise AccountError(
                gettext("'%(name)s' is a superuser, always an owner: change that in the admin.")
                % {"name": username}
            )
        before = roles.role_of(user) or roles.GUEST
        if before == role:
            return False
        if before == roles.OWNER and user.is_active and _active_owners() <= 1:
            raise AccountError(
                gettext("'%(name)s' is the last active owner: make another account an owner first.")
                % {"name": username}
            )
        roles.assign(user, role)
        record_event(
            actor=by,
            interface=DASHBOARD,
            action="account.role",
            target=_target(username),
            before={"role": before},
            after={"role": role},
        )
        _tell_sockets(user)
    return True


def deactivate(username: str, *, by: str) -> None:
    """The account can no longer log in; its sessions and live sockets end at their next use."""
    if username == by:
        raise AccountError(gettext("You cannot deactivate your own account."))
    with transaction.atomic():
        _serialized()
        user = _account(username)
        if not user.is_active:
            raise AccountError(gettext("'%(name)s' is already deactivated.") % {"name": username})
        role = roles.role_of(user)
        if role == roles.OWNER and _active_owners() <= 1:
            raise AccountError(
                gettext("'%(name)s' is the last active owner: make another account an owner first.")
                % {"name": username}
            )
        user.is_active = False
        user.save(update_fields=["is_active"])
        record_event(
            actor=by,
            interface=DASHBOARD,
            action="account.deactivate",
            target=_target(username),
            before={"active": True, "role": role},
            after={"active": False},
        )
        _tell_sockets(user)
