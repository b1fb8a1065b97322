from django.core.management.base import BaseCommand, CommandError

from audit.models import Event
from devices.agents.models import Agent
from devices.agents.services import AgentIdClash, register_agent


class Command(BaseCommand):
    help = (
        "Register an ESP32 agent (or re-register it). For --transport ws, prints a new device "
        "token as the last line (only its hash is stored; it replaces any earlier token)."
    )

    def add_arguments(self, parser):
        parser.add_argument("agent_id", help="The device's id, as it sends it in Device-Id (its MAC)")
        parser.add_argument("--transport", choices=Agent.Transport.values, required=True)
        parser.add_argument("--name", default="", help="A label for people")

    def handle(self, *args, agent_id: str, transport: str, name: str, **options):
        agent_id = agent_id.strip()
        if not agent_id or len(agent_id) > 64:
            raise CommandError("the agent id must be 1 to 64 characters")
        try:
            agent, token = register_agent(
                agent_id,
                transport=transport,
                name=name,
                actor="register_agent",
                interface=Event.Interface.SYSTEM,
            )
        except AgentIdClash as clash:
            raise CommandError(str(clash)) from None
        self.stdout.write(f"Agent {agent.agent_id} registered ({agent.get_transport_display()}).")
        if token:
            self.stdout.write("Device token (shown once; configure it as the device's Bearer token):")
            self.stdout.write(token)
