"""`show_home`: the home at a glance, which MCP Apps hosts show as the home view
(`dashboard.home_widget`) inside the conversation."""

from common.schemas import NoArguments, output_model
from dashboard.home_widget import HOME_VIEW, HomeViewOut, HomeViewResource, home_view
from mcp_endpoint.engine.providers import resources
from mcp_endpoint.engine.registry import registry, tool
from mcp_endpoint.engine.tools import ToolContext
from mcp_endpoint.engine.ui_extension import UI_EXTENSION, UI_SETTINGS, tool_ui_meta

registry.declare_extension(UI_EXTENSION, UI_SETTINGS)
resources.add_provider(HomeViewResource())
registry.add_instructions(
    "show_home shows the person the whole home (rooms, lights, alarm, latest values); hosts that "
    "show MCP Apps views display it as a live panel whose buttons switch lights and the alarm."
)


@tool(
    scope="read",
    read_only=True,
    idempotent=True,
    title="Show the home",
    output=output_model(HomeViewOut),
    meta=tool_ui_meta(HOME_VIEW),
)
def show_home(args: NoArguments, ctx: ToolContext) -> HomeViewOut:
    """The home at a glance: each room with its lights, latest sensor values and devices, what
    belongs to no room, the alarm and who is home"""
    return home_view()
