from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "devices.agents"
    label = "agents"
    verbose_name = "ESP32 agents"

    def ready(self) -> None:
        from devices.agents.gateway import gateway
        from mcp_endpoint.engine.registry import registry

        registry.add_provider(gateway)
