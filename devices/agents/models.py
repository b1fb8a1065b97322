"""ESP32 agents (the hub is their MCP client) and the tools they offer.

Rows change only through `devices.agents.services`. The tables keep their `devices_` names.
"""

from django.db import models


class Agent(models.Model):
    """An ESP32 device that speaks MCP to the hub (the hub is its MCP client)."""

    class Transport(models.TextChoices):
        WS = "ws", "WebSocket"
        MQTT = "mqtt", "MQTT"

    agent_id = models.CharField(max_length=64, unique=True)
    name = models.CharField(max_length=100, blank=True)
    transport = models.CharField(max_length=8, choices=Transport.choices, default=Transport.WS)
    # Pending until the owner approves (register_agent, pairing and the admin approve; a device
    # that announces or presents itself is pending): a pending agent's tools are neither
    # discovered, offered to LLMs nor callable.
    approved = models.BooleanField(default=False)
    online = models.BooleanField(default=False)
    last_seen = models.DateTimeField(null=True, blank=True)
    server_info = models.JSONField(default=dict, blank=True)
    capabilities = models.JSONField(default=dict, blank=True)
    token_hash = models.CharField(max_length=128, blank=True, editable=False)
    call_timeout = models.FloatField(default=30.0, help_text="Seconds to wait for a tool call.")
    # Stock xiaozhi firmware opens its WebSocket only while someone talks to it: offline is its
    # usual state, and a call then fails at once saying so (`outcomes.DeviceGone.on_demand`).
    connects_on_demand = models.BooleanField(
        default=False,
        help_text="The device connects only while someone talks to it (stock xiaozhi firmware).",
    )
    # The hub-assigned session of the live connection: a late disconnect of an older
    # connection must not mark a device offline that has already reconnected.
    session_id = models.CharField(max_length=64, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "devices_agent"
        ordering = ["agent_id"]

    def __str__(self) -> str:
        return self.name or self.agent_id


class AgentTool(models.Model):
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="tools")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    input_schema = models.JSONField(default=dict, blank=True)
    # The device's hints (readOnlyHint, destructiveHint...): a destructive tool's calls wait
    # for a person's confirmation (mcp_endpoint.controls.confirmation).
    annotations = models.JSONField(default=dict, blank=True)
    available = models.BooleanField(default=True)

    class Meta:
        db_table = "devices_agenttool"
        ordering = ["agent_id", "id"]
        constraints = [models.UniqueConstraint(fields=["agent", "name"], name="unique_tool_per_agent")]

    def __str__(self) -> str:
        return f"{self.agent.agent_id}:{self.name}"
