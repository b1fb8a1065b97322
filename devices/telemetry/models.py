"""Telemetry: every reading, each sensor's latest value, the MQTT deliveries already stored
(dedupe by message) and the messages refused. The tables keep their `devices_` names.
"""

from django.db import models


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
        db_table = "devices_telemetryreading"
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
    of every sensor" never scans the history. `label` is the owner's name for it (blank: the
    dashboard names it from its room and channel); the worker's upsert leaves it alone."""

    label = models.CharField(max_length=100, blank=True, db_default="")

    class Meta:
        db_table = "devices_sensor"
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

    class Meta:
        db_table = "devices_mqttdelivery"

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
        db_table = "devices_rejectedmessage"
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.topic}: {self.reason}"
