"""Per-device MQTT credentials of stock xiaozhi devices (rows change only through
`devices.xiaozhi.mqtt.credentials`)."""

from django.db import models


class MqttCredential(models.Model):
    """What a device connects to the device listener with: its client id (also its user name
    and the key of its topics) and the hash of its password, minted for its OTA answer."""

    agent = models.OneToOneField("agents.Agent", on_delete=models.CASCADE, related_name="mqtt_credential")
    client_id = models.CharField(max_length=64, unique=True)
    password_hash = models.CharField(max_length=64, editable=False)
    issued_at = models.DateTimeField()

    class Meta:
        verbose_name = "MQTT credential"

    def __str__(self) -> str:
        return self.client_id
