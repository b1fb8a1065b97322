"""The home's data: lights, the alarm, people, ESP32 agents, telemetry and the audit trail.

Rows are changed only through `devices.services`, which also audits and broadcasts.
"""

from django.db import models


class Light(models.Model):
    name = models.SlugField(max_length=64, unique=True, help_text="Stable id used by tools, e.g. 'salon'.")
    label = models.CharField(max_length=100, blank=True)
    room = models.CharField(max_length=100, blank=True)
    on = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.label or self.name


class Alarm(models.Model):
    """The house alarm: a single row (pk 1), created on first use."""

    armed = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    SINGLETON_PK = 1

    def __str__(self) -> str:
        return "Alarm (armed)" if self.armed else "Alarm (disarmed)"


class Person(models.Model):
    name = models.CharField(max_length=100, unique=True)
    present = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        verbose_name_plural = "people"

    def __str__(self) -> str:
        return self.name


class Agent(models.Model):
    """An ESP32 device that speaks MCP to the hub (the hub is its MCP client)."""

    class Transport(models.TextChoices):
        WS = "ws", "WebSocket"
        MQTT = "mqtt", "MQTT"

    agent_id = models.CharField(max_length=64, unique=True)
    name = models.CharField(max_length=100, blank=True)
    transport = models.CharField(max_length=8, choices=Transport.choices, default=Transport.WS)
    approved = models.BooleanField(default=True)
    online = models.BooleanField(default=False)
    last_seen = models.DateTimeField(null=True, blank=True)
    server_info = models.JSONField(default=dict, blank=True)
    capabilities = models.JSONField(default=dict, blank=True)
    token_hash = models.CharField(max_length=128, blank=True, editable=False)
    call_timeout = models.FloatField(default=30.0, help_text="Seconds to wait for a tool call.")
    # The hub-assigned session of the live connection: a late disconnect of an older
    # connection must not mark a device offline that has already reconnected.
    session_id = models.CharField(max_length=64, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["agent_id"]

    def __str__(self) -> str:
        return self.name or self.agent_id


class AgentTool(models.Model):
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="tools")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    input_schema = models.JSONField(default=dict, blank=True)
    available = models.BooleanField(default=True)

    class Meta:
        ordering = ["agent_id", "id"]
        constraints = [models.UniqueConstraint(fields=["agent", "name"], name="unique_tool_per_agent")]

    def __str__(self) -> str:
        return f"{self.agent.agent_id}:{self.name}"


class SensorValue(models.Model):
    """A value of the sensor `office/{zone}/{device_type}/{device_id}/{channel}`."""

    zone = models.CharField(max_length=64)
    device_type = models.CharField(max_length=64)
    device_id = models.CharField(max_length=64)
    channel = models.CharField(max_length=64)
    value = models.FloatField()
    unit = models.CharField(max_length=16, blank=True)
    measured_at = models.DateTimeField()

    class Meta:
        abstract = True

    @property
    def path(self) -> str:
        return f"{self.zone}/{self.device_type}/{self.device_id}/{self.channel}"


class TelemetryReading(SensorValue):
    """One reading, as the MQTT worker received it."""

    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-measured_at"]
        # Two readings of one sensor may share a time and a value (distinct readings are never
        # merged); a broker's redelivery is recognised by its message (`MqttDelivery`).
        indexes = [
            models.Index(
                fields=["zone", "device_type", "device_id", "channel", "measured_at"],
                name="telemetry_sensor_time",
            ),
            models.Index(fields=["measured_at"], name="telemetry_time"),
        ]

    def __str__(self) -> str:
        return f"{self.path}={self.value}{self.unit}"


class Sensor(SensorValue):
    """A sensor's latest reading, kept current by the MQTT worker so that "the newest value
    of every sensor" never scans the history."""

    class Meta:
        ordering = ["zone", "device_type", "device_id", "channel"]
        constraints = [
            models.UniqueConstraint(
                fields=["zone", "device_type", "device_id", "channel"], name="unique_sensor"
            )
        ]

    def __str__(self) -> str:
        return f"{self.path}={self.value}{self.unit}"


class MqttDelivery(models.Model):
    """The last QoS 1 message the hub stored from each packet id of each broker session.

    A broker sends an unacknowledged message again only to the same session (the client id),
    with the same packet id and the DUP flag; a message it sends for the first time has DUP
    unset, and a packet id is reused only once acknowledged (docs/MQTT.md has the
    measurements). Written in the same transaction as the message's reading, so a repeat that
    finds its row here was stored: it is acknowledged and not stored again, whichever worker
    stored it first. At most 65,535 rows per session (one per packet id, replaced in place)."""

    pk = models.CompositePrimaryKey("session", "packet_id")
    session = models.CharField(max_length=100)
    packet_id = models.PositiveIntegerField()
    digest = models.BigIntegerField()  # of topic and payload: tells a reused id with other content

    def __str__(self) -> str:
        return f"{self.session}#{self.packet_id}"


class RejectedMessage(models.Model):
    """An MQTT message the worker could not use, kept (bounded, oldest pruned) for a person
    to look at: why, on which topic, and what it carried."""

    topic = models.CharField(max_length=255)
    payload = models.TextField(blank=True)
    reason = models.CharField(max_length=200)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.topic}: {self.reason}"


class MqttWorker(models.Model):
    """What each MQTT worker last reported (every few seconds): its broker link and counters.
    Any process can show it; a report older than a minute means the worker is not running."""

    client_id = models.CharField(max_length=100, unique=True)
    broker = models.CharField(max_length=200)
    connected = models.BooleanField(default=False)
    since = models.DateTimeField(null=True, blank=True)
    reported_at = models.DateTimeField()
    counters = models.JSONField(default=dict, blank=True)
    # [{"topic", "state", "reason"}]: each subscription `ok`, `refused`, `silent` or `pending`.
    subscriptions = models.JSONField(default=list, blank=True)
    adopted = models.JSONField(default=list, blank=True)  # client ids of stopped workers it stands in for

    class Meta:
        ordering = ["client_id"]

    def __str__(self) -> str:
        return f"{self.client_id} ({'connected' if self.connected else 'disconnected'})"


class Event(models.Model):
    """The audit trail: who changed what, through which door, from what to what."""

    class Interface(models.TextChoices):
        DASHBOARD = "dashboard"
        ADMIN = "admin"
        REST = "rest"
        MCP_HTTP = "mcp-http"
        MCP_WS = "mcp-ws"
        MCP_STDIO = "mcp-stdio"
        MQTT = "mqtt"
        DEVICE = "device"
        SYSTEM = "system"

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.CharField(max_length=150, blank=True)
    interface = models.CharField(max_length=16, choices=Interface.choices)
    action = models.CharField(max_length=64)
    target = models.CharField(max_length=200, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["interface", "-at"], name="event_interface_time"),
            models.Index(fields=["target", "-at"], name="event_target_time"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor}@{self.interface} {self.action} {self.target}"
