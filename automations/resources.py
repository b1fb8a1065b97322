"""Helping a model write an automation: the definition's JSON schema with examples as an MCP
resource (`homehub://automations/schema`), and the `write_automation` prompt, which hands the
model the home's names and the way to check, try and save what it writes."""

from __future__ import annotations

import json
from typing import Any

from automations.announce import AUTOMATIONS_CHANGED, AUTOMATIONS_GROUP
from automations.definition import Definition
from automations.models import Scene
from devices.agents.models import Agent
from devices.home.models import Light, Person
from devices.telemetry.models import Sensor
from mcp_endpoint.engine.providers import Prompt, PromptArgument, Resource, ResourceNotFound, ResourceTemplate

SCHEMA = "homehub://automations/schema"

EXAMPLES: list[dict[str, Any]] = [
    {
        "name": "Arm when everyone leaves",
        "triggers": [{"type": "presence", "who": "everyone", "to": "away"}],
        "conditions": [{"type": "alarm", "armed": False}],
        "actions": [
            {"tool": "set_alarm_state", "arguments": {"armed": True}},
            {"notify": "Alarm armed: nobody is home"},
        ],
    },
    {
        "name": "Porch light at sunset",
        "description": "Fifteen minutes before sunset, on weekdays",
        "triggers": [{"type": "sun", "event": "sunset", "offset_minutes": -15}],
        "conditions": [{"type": "time", "weekdays": ["mon", "tue", "wed", "thu", "fri"]}],
        "actions": [{"tool": "set_light_state", "arguments": {"name": "garage", "on": True}}],
    },
    {
        "name": "Too hot in the living room",
        "mode": "single",
        "triggers": [
            {
                "type": "sensor",
                "zone": "living_room",
                "channel": "temperature",
                "above": 28,
                "for_seconds": 600,
            }
        ],
        "actions": [{"notify": "Living room above 28 °C for ten minutes", "level": "warning"}],
    },
    {
        "name": "Lights off at night",
        "triggers": [{"type": "time", "cron": "30 23 * * *"}],
        "conditions": [{"type": "light", "name": "salon", "is": "on"}],
        "actions": [
            {"notify": "Switching the salon off in a minute"},
            {"delay_seconds": 60},
            {"tool": "set_light_state", "arguments": {"name": "salon", "on": False}},
        ],
    },
]


def schema_document() -> dict[str, Any]:
    return {
        "schema": Definition.model_json_schema(by_alias=True),
        "examples": EXAMPLES,
        "notes": "Times are in the home's time zone; cron has five fields. Names (lights, people, "
        "sensor zones and channels, agents, scenes, tools) must exist: automation_validate says "
        "which do not. Tool arguments follow each tool's input schema.",
    }


class AutomationResources:
    scope = "read"
    change_group = AUTOMATIONS_GROUP
    change_type = AUTOMATIONS_CHANGED

    def list_resources(self) -> list[Resource]:
        return [Resource(SCHEMA, "automation-schema", "An automation's JSON schema, with examples")]

    def templates(self) -> list[ResourceTemplate]:
        return []

    def handles(self, uri: str) -> bool:
        return uri == SCHEMA

    def read(self, uri: str) -> str:
        if uri != SCHEMA:
            raise ResourceNotFound(uri)
        return json.dumps(schema_document(), ensure_ascii=False)

    def uris_for_event(self, event: dict[str, Any]) -> list[str]:
        return []  # the schema does not change while the hub runs


def home_names() -> dict[str, list[str]]:
    """What an automation may name in the home now."""
    return {
        "lights": list(Light.objects.values_list("name", flat=True)),
        "people": list(Person.objects.values_list("name", flat=True)),
        "sensors (zone/channel)": sorted(
            {f"{z}/{c}" for z, c in Sensor.objects.values_list("zone", "channel")}
        ),
        "agents": list(Agent.objects.filter(approved=True).values_list("agent_id", flat=True)),
        "scenes": list(Scene.objects.values_list("name", flat=True)),
    }


def render_write_automation(arguments: dict[str, str]) -> list[dict[str, Any]]:
    goal = arguments.get("goal") or "(ask the owner what it should do)"
    text = (
        f"Write a HomeHub automation that does this: {goal}\n\n"
        f"An automation is a JSON object; its schema and examples are the resource {SCHEMA}. "
        f"The home's names now:\n{json.dumps(home_names(), ensure_ascii=False)}\n\n"
        "Then: check it with automation_validate (each problem names its field), see what it "
        "would have done over the last days with automation_dry_run, and save it with "
        "automation_save. It is saved disabled: enabling it (automation_set_enabled, with the "
        "version automation_save answered) waits for an owner's approval on the hub, who sees "
        "the exact definition and its dry run."
    )
    return [{"role": "user", "content": {"type": "text", "text": text}}]


WRITE_AUTOMATION = Prompt(
    name="write_automation",
    title="Write an automation",
    description="Guides the model through writing, checking, trying and saving an automation",
    render=render_write_automation,
    scope="automations",
    arguments=[PromptArgument("goal", "What the automation should do, in words", required=True)],
)
