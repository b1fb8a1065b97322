"""What clients read of the rows the hub gives out stays as it was before each row shape was
declared once (`common.schemas`): the MCP tools' outputSchema and the REST API's OpenAPI
components, with their names, types and descriptions (no declaration's docstring leaking in as
a description, no component renamed after a selector's type)."""

from homehub.api import api
from mcp_endpoint.engine.registry import registry

OUTPUT_SCHEMAS = {
    "get_alarm_status": {
        "properties": {"armed": {"type": "boolean"}},
        "required": ["armed"],
        "type": "object",
    },
    "get_all_states": {
        "$defs": {
            "PresenceOut": {
                "properties": {
                    "known_people": {"items": {"type": "string"}, "type": "array"},
                    "present": {"type": "boolean"},
                },
                "required": ["present", "known_people"],
                "type": "object",
            }
        },
        "properties": {
            "alarm": {"type": "boolean"},
            "lights": {"additionalProperties": {"type": "boolean"}, "type": "object"},
            "presence": {"$ref": "#/$defs/PresenceOut"},
        },
        "required": ["lights", "alarm", "presence"],
        "type": "object",
    },
    "get_presence": {
        "properties": {
            "known_people": {"items": {"type": "string"}, "type": "array"},
            "present": {"type": "boolean"},
        },
        "required": ["present", "known_people"],
        "type": "object",
    },
    "list_lights_on": {
        "properties": {"on": {"items": {"type": "string"}, "type": "array"}},
        "required": ["on"],
        "type": "object",
    },
}
COMPONENTS = {
    "AgentOut": {
        "properties": {
            "agent_id": {"title": "Agent Id", "type": "string"},
            "approved": {"title": "Approved", "type": "boolean"},
            "connects_on_demand": {"title": "Connects On Demand", "type": "boolean"},
            "last_seen": {
                "anyOf": [{"format": "date-time", "type": "string"}, {"type": "null"}],
                "title": "Last Seen",
            },
            "name": {"title": "Name", "type": "string"},
            "online": {"title": "Online", "type": "boolean"},
            "server_info": {"additionalProperties": True, "title": "Server Info", "type": "object"},
            "tools": {"items": {"$ref": "#/components/schemas/ToolOut"}, "title": "Tools", "type": "array"},
            "transport": {"title": "Transport", "type": "string"},
        },
        "required": [
            "agent_id",
            "name",
            "transport",
            "approved",
            "online",
            "connects_on_demand",
            "last_seen",
            "server_info",
            "tools",
        ],
        "title": "AgentOut",
        "type": "object",
    },
    "AlarmOut": {
        "properties": {
            "armed": {"title": "Armed", "type": "boolean"},
            "updated_at": {
                "anyOf": [{"format": "date-time", "type": "string"}, {"type": "null"}],
                "title": "Updated At",
            },
        },
        "required": ["armed", "updated_at"],
        "title": "AlarmOut",
        "type": "object",
    },
    "Error": {
        "properties": {"detail": {"title": "Detail"}},
        "required": ["detail"],
        "title": "Error",
        "type": "object",
    },
    "LightOut": {
        "properties": {
            "label": {"title": "Label", "type": "string"},
            "name": {"title": "Name", "type": "string"},
            "on": {"title": "On", "type": "boolean"},
            "room": {"title": "Room", "type": "string"},
            "updated_at": {"format": "date-time", "title": "Updated At", "type": "string"},
        },
        "required": ["name", "label", "room", "on", "updated_at"],
        "title": "LightOut",
        "type": "object",
    },
    "PersonOut": {
        "properties": {
            "name": {"title": "Name", "type": "string"},
            "present": {"title": "Present", "type": "boolean"},
            "updated_at": {"format": "date-time", "title": "Updated At", "type": "string"},
        },
        "required": ["name", "present", "updated_at"],
        "title": "PersonOut",
        "type": "object",
    },
    "SensorOut": {
        "properties": {
            "channel": {"title": "Channel", "type": "string"},
            "device_id": {"title": "Device Id", "type": "string"},
            "device_type": {"title": "Device Type", "type": "string"},
            "measured_at": {"format": "date-time", "title": "Measured At", "type": "string"},
            "path": {"title": "Path", "type": "string"},
            "unit": {"title": "Unit", "type": "string"},
            "value": {"title": "Value", "type": "number"},
            "zone": {"title": "Zone", "type": "string"},
        },
        "required": ["path", "zone", "device_type", "device_id", "channel", "value", "unit", "measured_at"],
        "title": "SensorOut",
        "type": "object",
    },
    "ToolOut": {
        "properties": {
            "available": {"title": "Available", "type": "boolean"},
            "description": {"title": "Description", "type": "string"},
            "input_schema": {"additionalProperties": True, "title": "Input Schema", "type": "object"},
            "name": {"title": "Name", "type": "string"},
        },
        "required": ["name", "description", "input_schema", "available"],
        "title": "ToolOut",
        "type": "object",
    },
}


def test_the_home_tools_output_schemas_are_unchanged():
    for name, schema in OUTPUT_SCHEMAS.items():
        tool = registry.get_declared(name)
        assert tool is not None
        assert tool.definition()["outputSchema"] == schema, name


def test_the_rest_rows_openapi_components_are_unchanged():
    components = api.get_openapi_schema()["components"]["schemas"]
    for name, schema in COMPONENTS.items():
        assert components[name] == schema, name
