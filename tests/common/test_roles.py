"""Household roles: the migration makes the three groups; a superuser is an owner, an account
in no role's group a guest (never more), one in several the highest; what each role may do."""

import pytest
from django.contrib.auth.models import AnonymousUser, Group
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from common import roles
from tests.hub_support import create_account


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


@pytest.mark.django_db(transaction=True)
def test_the_migration_creates_the_groups():
    _migrate([("common", "0001_initial")])
    assert not Group.objects.filter(name__in=roles.ROLES).exists()
    _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    assert set(Group.objects.values_list("name", flat=True)) >= {"guest", "member", "owner"}


@pytest.mark.django_db
def test_who_holds_which_role(django_user_model):
    boss = django_user_model.objects.create_superuser("boss", "", "a-long-password-1")
    plain = django_user_model.objects.create_user("plain", password="a-long-password-1")
    both = create_account("both", "a-long-password-1", "member")
    both.groups.add(Group.objects.get_or_create(name="guest")[0])
    gone = create_account("gone", "a-long-password-1", "owner")
    gone.is_active = False
    assert roles.role_of(boss) == "owner"
    assert roles.role_of(plain) == "guest"
    assert roles.role_of(type(both).objects.get(pk=both.pk)) == "member"
    assert roles.role_of(gone) is None and roles.role_of(AnonymousUser()) is None
    assert not roles.can(AnonymousUser(), roles.SEE_HOME)


@pytest.mark.django_db
def test_ensure_admin_makes_an_owner(django_user_model, monkeypatch):
    monkeypatch.setenv("HOMEHUB_ADMIN_PASSWORD", "a-long-password-1")  # chosen: no copy kept anywhere
    call_command("ensure_admin", url="http://hub.test/")
    admin = django_user_model.objects.get(username="admin")
    assert roles.role_of(admin) == "owner" and admin.groups.filter(name="owner").exists()


def test_what_each_role_may_do():
    guest, member, owner = (roles.capabilities(r) for r in roles.ROLES)
    assert guest == {roles.SEE_HOME, roles.SWITCH_LIGHTS}
    assert member - guest == {
        roles.ARM_ALARM,
        roles.MARK_PRESENCE,
        roles.CALL_DEVICE_TOOLS,
        roles.USE_INVOICES,
        roles.RUN_SCENES,
        roles.READ_NOTIFICATIONS,
    }
    assert {
        roles.DECIDE_REQUESTS,
        roles.MANAGE_DEVICES,
        roles.VIEW_ACTIVITY,
        roles.MANAGE_ACCOUNTS,
    } <= owner - member
    assert roles.capabilities(None) == frozenset()
    assert roles.least_role(roles.ARM_ALARM) == "member"
    assert roles.capability_for_tool("set_light_state", "control") == roles.SWITCH_LIGHTS
    assert roles.capability_for_tool("set_alarm_state", "control") == roles.ARM_ALARM
    assert roles.capability_for_tool("02_00__self_lamp_set_power", "devices") == roles.CALL_DEVICE_TOOLS
    assert roles.capability_for_tool("gone_tool", None) == roles.CALL_ANY_TOOL
