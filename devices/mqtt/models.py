"""What each MQTT worker reports about itself. The table keeps its `devices_` name."""

from django.db import models


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
        db_table = "devices_mqttworker"
        ordering = ["client_id"]

    def __str__(self) -> str:
        return f"{self.client_id} ({'connected' if self.connected else 'disconnected'})"
