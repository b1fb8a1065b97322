from django.apps import AppConfig


class DevicesConfig(AppConfig):
    name = "devices"
    verbose_name = "Home and devices"

    def ready(self) -> None:
        from devices.audit import audit_tool_call
        from devices.gateway import gateway
        from devices.mcp_resources import HOME_SUMMARY, HomeResources
        from mcp_endpoint.registry import registry
        from mcp_endpoint.resources import resources

        registry.add_observer(audit_tool_call)
        registry.add_provider(gateway)
        resources.add_provider(HomeResources())
        resources.add_prompt(HOME_SUMMARY)
