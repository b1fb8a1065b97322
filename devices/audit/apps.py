from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "devices.audit"
    label = "audit"
    verbose_name = "Audit trail"

    def ready(self) -> None:
        from devices.audit.tool_calls import audit_tool_call
        from mcp_endpoint.registry import registry

        registry.add_observer(audit_tool_call)
