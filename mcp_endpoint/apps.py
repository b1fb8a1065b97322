from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class McpEndpointConfig(AppConfig):
    name = "mcp_endpoint"
    verbose_name = "MCP endpoint"

    def ready(self) -> None:
        # Like admin.py: every installed app may declare tools in <app>/mcp_tools.py.
        autodiscover_modules("mcp_tools")
        # The owner's settings of tools (the catalogue) load when a process starts serving.
        from mcp_endpoint.catalogue import watcher
        from mcp_endpoint.registry import registry

        registry.add_starter(watcher.start)
