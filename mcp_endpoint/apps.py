from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class McpEndpointConfig(AppConfig):
    name = "mcp_endpoint"
    verbose_name = "MCP endpoint"

    def ready(self) -> None:
        # Like admin.py: every installed app may declare tools in <app>/mcp_tools.py.
        autodiscover_modules("mcp_tools")
        # The owner's settings of tools (the catalogue) load when a process starts serving.
        from mcp_endpoint.controls.catalogue import watcher
        from mcp_endpoint.engine.registry import registry
        from mcp_endpoint.engine.tool_call_audit import audit_tool_call

        registry.add_starter(watcher.start)
        # Calls that failed, were refused or were confirmed by a person go to the audit trail.
        registry.add_observer(audit_tool_call)
