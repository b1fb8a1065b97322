"""The audit trail. The table keeps its `devices_` name."""

from django.db import models


class Event(models.Model):
    """The audit trail: who changed what, through which door, from what to what."""

    class Interface(models.TextChoices):
        DASHBOARD = "dashboard"
        ADMIN = "admin"
        REST = "rest"
        MCP_HTTP = "mcp-http"
        MCP_WS = "mcp-ws"
        MCP_STDIO = "mcp-stdio"
        MCP_ENDPOINT = "mcp-endpoint"  # an outbound MCP endpoint the hub serves (xiaozhi)
        MQTT = "mqtt"
        DEVICE = "device"
        SYSTEM = "system"
        AUTOMATION = "automation"  # an automation's run (the actor names the automation)

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.CharField(max_length=150, blank=True)
    interface = models.CharField(max_length=16, choices=Interface.choices)
    action = models.CharField(max_length=64)
    target = models.CharField(max_length=200, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)

    class Meta:
        db_table = "devices_event"
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["interface", "-at"], name="event_interface_time"),
            models.Index(fields=["target", "-at"], name="event_target_time"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor}@{self.interface} {self.action} {self.target}"
