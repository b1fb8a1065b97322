from django.apps import AppConfig


class DevicesConfig(AppConfig):
    name = "devices"
    verbose_name = "Home and devices"

    def ready(self) -> None:
        from devices.audit import audit_tool_call
        from mcp_endpoint.registry import registry

        registry.add_observer(audit_tool_call)
