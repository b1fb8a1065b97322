"""A `notify` action of an automation run by a real `serve`'s engine reaches the household's
service: a real HTTP receiver on loopback (Apprise `json://`) gets the message, titled with the
automation's name, when a change fires it."""

from __future__ import annotations

import pytest

from automations.models import Automation
from automations.notifications.models import Notification
from devices.home import services as home_services
from tests.automations.engine_support import automation, runs
from tests.devices_support import hub
from tests.mqtt_support import wait_until

pytestmark = pytest.mark.live


def test_a_notify_action_is_delivered_to_the_households_service(live_env, http_receiver):
    home_services.set_alarm_state(False, actor="ana", interface="dashboard")  # whatever ran before
    automation(
        "Alarma armada",
        [{"type": "alarm", "to": "armed"}],
        [{"notify": "La alarma se ha armado", "level": "warning"}],
    )
    with hub(live_env, serve=True, AUTOMATION_LEASE_SECONDS="1.5", NOTIFY_URLS=http_receiver.url("casa")):
        wait_until(lambda: Automation.objects.get().holder, what="held by the engine (so listening)")
        home_services.set_alarm_state(True, actor="ana", interface="dashboard")
        (post,) = http_receiver.wait(1)
        (run,) = wait_until(
            lambda: [r for r in runs("Alarma armada") if r.status != "running"], what="the run"
        )

    assert post["path"] == "/casa" and post["title"] == "Alarma armada"
    assert post["message"] == "La alarma se ha armado" and post["type"] == "warning"
    assert run.status == "done" and run.trace[-1]["ok"] is True
    row = Notification.objects.get(source="automation")
    assert (row.source, row.text) == ("automation", "La alarma se ha armado")
