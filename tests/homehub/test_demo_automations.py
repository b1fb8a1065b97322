"""The demo's automations: saved as ordinary automations, valid against the demo's home, enabled
by its first owner, kept as the owner edited them across restarts, named in the banner; the
sunset one skipped, with why, where the home has no location."""

from __future__ import annotations

from datetime import UTC

import pytest

from automations import authoring
from automations.models import Automation, AutomationVersion
from automations.validation import validate
from homehub.demo.automations import DEMO_AUTOMATIONS, seed_automations
from homehub.demo.banner import automation_lines
from homehub.demo.catalogue import AGENTS
from homehub.demo.services import prepare
from tests.hub_support import create_account

pytestmark = pytest.mark.django_db
NAMES = ["Intruder while armed", "Last one out", "Stuffy air", "Sunset lights"]


@pytest.fixture
def demo_home(settings):
    settings.HOMEHUB_LOCATION = "14.63,-90.51"
    prepare(AGENTS, UTC)


def test_the_demo_ships_four_valid_automations_enabled_by_the_owner(demo_home, django_user_model):
    create_account("member-first", "pw-for-tests-only", "member")
    owner = django_user_model.objects.create_superuser("admin", "a@example.com", "pw-for-tests-only")
    seeded = seed_automations()

    assert seeded.names == NAMES and seeded.skipped == [] and seeded.owner == "admin"
    for row in Automation.objects.all():
        assert row.enabled and row.enabled_by == owner, row.name
        validate(row.definition)  # raises DefinitionError naming what does not hold
    intruder = Automation.objects.get(name="Intruder while armed").definition
    assert intruder["triggers"] == [
        {"type": "sensor", "zone": "living_room", "channel": "presence", "above": 0.5, "for_seconds": 0}
    ]
    assert intruder["conditions"] == [{"type": "alarm", "armed": True}]
    assert intruder["actions"][0]["level"] == "alarm"
    assert automation_lines("http://hub", seeded) == [
        f"  Automations: {', '.join(NAMES)} (enabled by admin; yours to edit at http://hub/automations/)"
    ]


def test_a_restart_keeps_the_owners_edits(demo_home, django_user_model):
    owner = django_user_model.objects.create_superuser("admin", "a@example.com", "pw-for-tests-only")
    seed_automations()
    edited = {**DEMO_AUTOMATIONS[2], "description": "mine now"}
    authoring.save_automation(edited, actor="admin", interface="dashboard", user=owner)
    authoring.set_enabled("Last one out", False, user=owner, actor="admin", interface="dashboard")
    authoring.delete_automation("Sunset lights", actor="admin", interface="dashboard")

    seeded = seed_automations()

    assert seeded.names == NAMES
    assert Automation.objects.get(name="Stuffy air").definition["description"] == "mine now"
    assert not Automation.objects.get(name="Last one out").enabled
    assert AutomationVersion.objects.filter(automation__name="Stuffy air").count() == 2
    assert Automation.objects.get(name="Sunset lights").version == 1  # a deleted one comes back


def test_without_a_location_the_sunset_one_is_skipped_and_the_banner_says_why(demo_home, settings):
    settings.HOMEHUB_LOCATION = ""
    seeded = seed_automations()

    assert seeded.names == NAMES[:3] and seeded.owner is None
    assert not Automation.objects.filter(enabled=True).exists()  # no owner yet: saved disabled
    lines = automation_lines("http://hub", seeded)
    assert "disabled: no owner account to enable them yet" in lines[0]
    assert lines[1].strip() == (
        "skipped Sunset lights: a sun trigger needs the home's location: set HOMEHUB_LOCATION to "
        "'latitude,longitude'"
    )
