"""Rooms and scenes. Membership lives here, not on the devices' rows: the device apps do not
import automations, so each light, sensor zone and agent is tied to at most one room by a
unique row of this app. The notifications' models are kept in `automations/notifications/`."""

from django.db import models

from automations.notifications.models import Notification, NotifyTarget
from devices.agents.models import Agent
from devices.home.models import Light


class Room(models.Model):
    name = models.CharField(max_length=100, unique=True)
    ordering = models.IntegerField(default=0, help_text="Rooms are shown by this number, then by name.")

    class Meta:
        ordering = ["ordering", "name"]

    def __str__(self) -> str:
        return self.name


class RoomLight(models.Model):
    """A light's room (a light is in at most one)."""

    room = models.ForeignKey(Room, on_delete=models.CASCADE, related_name="light_links")
    light = models.OneToOneField(Light, on_delete=models.CASCADE, related_name="+")

    def __str__(self) -> str:
        return f"{self.light} in {self.room}"


class RoomAgent(models.Model):
    """An agent's room (an agent is in at most one)."""

    room = models.ForeignKey(Room, on_delete=models.CASCADE, related_name="agent_links")
    agent = models.OneToOneField(Agent, on_delete=models.CASCADE, related_name="+")

    def __str__(self) -> str:
        return f"{self.agent} in {self.room}"


class ZoneRoom(models.Model):
    """The owner's table from a sensor zone (`office/<zone>/...`) to its room."""

    zone = models.CharField(
        max_length=64, unique=True, help_text="The zone as sensors publish it, e.g. living_room."
    )
    room = models.ForeignKey(Room, on_delete=models.CASCADE, related_name="zones")

    class Meta:
        ordering = ["zone"]
        verbose_name = "sensor zone"

    def __str__(self) -> str:
        return f"{self.zone} -> {self.room}"


class Scene(models.Model):
    """A named set of light states ({light name: on}) plus optional tool calls
    ([{"tool", "arguments"}]), written only through `automations.services.save_scene`, which
    checks every light exists."""

    name = models.CharField(max_length=100, unique=True)
    lights = models.JSONField(default=dict, blank=True)
    tool_calls = models.JSONField(default=list, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


__all__ = ["Notification", "NotifyTarget", "Room", "RoomAgent", "RoomLight", "Scene", "ZoneRoom"]
