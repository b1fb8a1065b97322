"""A database made before `devices/` was split by concern keeps every row when migrated after
the split: the tables stay, the models change owners, content types follow them."""

import pytest
from django.apps import apps
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

# Back to before the split: the apps that took the models over (and what depends on them) unapplied.
BEFORE = [("devices", "0005_mqttworker_subscriptions"), ("xiaozhi", None), ("agents", None)]

pytestmark = pytest.mark.django_db(transaction=True)


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state([t for t in targets if t[1] is not None]).apps


def test_rows_made_before_the_split_are_there_after_it():
    old = _migrate(BEFORE)
    now = timezone.now()
    light = old.get_model("devices", "Light").objects.create(name="porche", label="Porche", on=True)
    old.get_model("devices", "Person").objects.create(name="Rosa", present=True)
    agent = old.get_model("devices", "Agent").objects.create(agent_id="esp-old", name="Old board")
    old.get_model("devices", "AgentTool").objects.create(agent=agent, name="self.led.set")
    old.get_model("devices", "TelemetryReading").objects.create(
        zone="z", device_type="t", device_id="d", channel="c", value=21.5, measured_at=now
    )
    old.get_model("devices", "Event").objects.create(
        actor="before", interface="system", action="light.set", target="light:porche"
    )
    old.get_model("devices", "MqttWorker").objects.create(client_id="w-old", broker="b", reported_at=now)
    old_type = ContentType.objects.get_or_create(app_label="devices", model="light")[0]

    leaves = MigrationExecutor(connection).loader.graph.leaf_nodes()
    _migrate(leaves)

    from audit.models import Event
    from devices.agents.models import Agent
    from devices.home.models import Light, Person
    from devices.mqtt.models import MqttWorker
    from devices.telemetry.models import TelemetryReading

    assert Light.objects.get(name="porche").pk == light.pk
    assert Light.objects.get(name="porche").on is True
    assert Person.objects.get(name="Rosa").present is True
    assert [t.name for t in Agent.objects.get(agent_id="esp-old").tools.all()] == ["self.led.set"]
    assert TelemetryReading.objects.get(device_id="d").value == 21.5
    assert Event.objects.filter(actor="before", action="light.set").exists()
    assert MqttWorker.objects.filter(client_id="w-old").exists()
    # The content type (and with it permissions and the admin's history) moved with its model.
    ContentType.objects.clear_cache()
    assert ContentType.objects.get(pk=old_type.pk).app_label == "home"
    assert ContentType.objects.get_for_model(apps.get_model("home", "Light")).pk == old_type.pk
