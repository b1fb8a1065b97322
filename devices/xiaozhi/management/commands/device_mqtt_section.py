import json

from django.core.management.base import BaseCommand, CommandError

from audit.models import Event
from devices.agents.models import Agent
from devices.xiaozhi.mqtt.credentials import EndpointError
from devices.xiaozhi.mqtt_config import mqtt_section


class Command(BaseCommand):
    help = (
        "Print the `mqtt` section of an agent's OTA answer (JSON, last line), with a new password "
        "(the previous one stops working for new connections): what stock firmware in MQTT mode "
        "connects with, and what `simulate_device --mqtt` takes. Needs DEVICE_MQTT_ENDPOINT."
    )

    def add_arguments(self, parser):
        parser.add_argument("agent_id", help="A registered agent (register_agent AGENT_ID --transport ws)")

    def handle(self, *args, agent_id: str, **options):
        agent = Agent.objects.filter(agent_id=agent_id).first()
        if agent is None:
            raise CommandError(f"no agent '{agent_id}': register it first (register_agent)")
        try:
            section = mqtt_section(agent, actor="device_mqtt_section", interface=Event.Interface.SYSTEM)
        except EndpointError as exc:
            raise CommandError(str(exc)) from None
        if section is None:
            raise CommandError("DEVICE_MQTT_ENDPOINT is not set: devices are offered the WebSocket only")
        self.stdout.write(json.dumps(section))
