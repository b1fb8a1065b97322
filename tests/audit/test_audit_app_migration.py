"""The audit trail left `devices/` for a top-level `audit/` app. Its label (`audit`), its
migrations and its table (`devices_event`) stayed, so a database made before the move needs
no migration of its own: every event is there, and the content type, with the permissions
given on it and the admin's history, stays attached to `Event`."""

import pytest
from django.apps import apps
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import Permission, User
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def test_events_permissions_and_history_made_before_the_move_stay_attached():
    # The last state before the move: the audit app's own leaf, as `devices/audit/` left it.
    _migrate([("audit", "0002_event_interface_mcp_endpoint")])
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO devices_event (at, actor, interface, action, target) "
            "VALUES (CURRENT_TIMESTAMP, 'before', 'system', 'light.set', 'light:porche')"
        )
    event_type = ContentType.objects.get_or_create(app_label="audit", model="event")[0]
    permission = Permission.objects.get_or_create(
        content_type=event_type, codename="view_event", defaults={"name": "Can view event"}
    )[0]
    auditor = User.objects.create_user("auditor")
    auditor.user_permissions.add(permission)
    LogEntry.objects.create(
        user=auditor, content_type=event_type, object_id="1", object_repr="event", action_flag=CHANGE
    )

    executor = MigrationExecutor(connection)
    # Nothing of the move is left to apply: the moved app reads the history the old one wrote;
    # what remains are the audit app's own later migrations (new doors in the choices).
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    assert [m.app_label for m, _ in plan] == ["audit"] * len(plan)
    assert all(m.name > "0002" for m, _ in plan), plan
    _migrate(executor.loader.graph.leaf_nodes())
    call_command("makemigrations", "audit", "--check", "--dry-run", verbosity=0)

    from audit.models import Event

    assert apps.get_app_config("audit").name == "audit"
    assert Event._meta.db_table == "devices_event"
    assert Event.objects.filter(actor="before", action="light.set", target="light:porche").exists()
    ContentType.objects.clear_cache()
    assert ContentType.objects.get_for_model(Event).pk == event_type.pk
    auditor = User.objects.get(username="auditor")
    assert auditor.has_perm("audit.view_event")
    assert LogEntry.objects.get(user=auditor).content_type.model_class() is Event
