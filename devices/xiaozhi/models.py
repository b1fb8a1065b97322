"""Stock xiaozhi devices asking to be added (their OTA check-ins), and their bindings.

Rows change only through `devices.xiaozhi.services`.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from devices.agents.models import Agent
from devices.xiaozhi.mqtt.models import MqttCredential  # the MQTT credentials live beside their code

__all__ = ["Activation", "MqttCredential"]


class Activation(models.Model):
    """One device (its MAC and the Client-Id its firmware keeps) given an activation code at an
    OTA check-in; once the owner types the code, its binding to an agent, until unbound.

    pending: not bound, before `expires_at`; expired: not bound, after it; bound: `bound_at` set
    and `unbound_at` not; unbound: both set."""

    device_id = models.CharField(max_length=64, db_index=True, help_text="Device-Id: the MAC")
    client_id = models.CharField(max_length=64, blank=True, help_text="Client-Id: the firmware's UUID")
    serial_number = models.CharField(max_length=64, blank=True)
    activation_version = models.CharField(max_length=8, blank=True)
    code = models.CharField(max_length=6, db_index=True)
    challenge = models.CharField(max_length=64)
    expires_at = models.DateTimeField()
    board = models.JSONField(default=dict, blank=True, help_text="The board's type and name")
    firmware = models.JSONField(default=dict, blank=True, help_text="The application's name and version")
    system_info = models.JSONField(default=dict, blank=True, help_text="The check-in's body, as sent")
    user_agent = models.CharField(max_length=200, blank=True)
    language = models.CharField(max_length=35, blank=True)
    address = models.CharField(
        max_length=64, blank=True, help_text="Where the check-in that got the code came from (an IPv6 /64)"
    )
    # The hub cannot check it (it does not know the key in the device's eFuse): kept as given.
    answer = models.JSONField(null=True, blank=True, help_text="The device's answer to the challenge")
    answered_at = models.DateTimeField(null=True, blank=True)
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    bound_at = models.DateTimeField(null=True, blank=True)
    bound_by = models.CharField(max_length=150, blank=True)
    token_handed_at = models.DateTimeField(
        null=True, blank=True, help_text="When the device was first handed its device token"
    )
    unbound_at = models.DateTimeField(null=True, blank=True)
    unbound_by = models.CharField(max_length=150, blank=True)
    last_check_in = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["device_id"],
                condition=models.Q(bound_at__isnull=False, unbound_at__isnull=True),
                name="xiaozhi_one_binding_per_device",
            )
        ]

    def __str__(self) -> str:
        return f"{self.device_id} ({self.state})"

    @property
    def state(self) -> str:
        if self.bound_at is None:
            return "pending" if self.expires_at > timezone.now() else "expired"
        return "unbound" if self.unbound_at is not None else "bound"
