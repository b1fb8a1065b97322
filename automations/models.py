"""Rooms, scenes and automations. Membership lives here, not on the devices' rows: the device apps do not
import automations, so each light, sensor zone and agent is tied to at most one room by a
unique row of this app. The notifications' models are kept in `automations/notifications/`."""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy

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


class EngineHolder(models.Model):
    """A hub process's automations engine, alive while `held_until` is ahead: the one lease
    it renews each round, whatever the number of automations it holds (each names it in
    `Automation.holder`). Deleted on a clean stop; a lapsed one is deleted by the next round
    of any engine (`automations.engine.services.claim_round`)."""

    name = models.CharField(max_length=100, unique=True)
    held_until = models.DateTimeField()
    renewed_at = models.DateTimeField()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Automation(models.Model):
    """An automation: its current definition (`automations.definition`, written only through
    `automations.authoring`, which keeps every version), whether it runs and with whose rights,
    which engine holds it (`holder`, an `EngineHolder`'s name, or "": one hub process evaluates
    each automation, while that holder's lease is live) and the engine's state that must
    outlive a process (when each schedule last fired, `for_seconds` timers)."""

    name = models.CharField(max_length=100, unique=True)
    definition = models.JSONField()
    version = models.PositiveIntegerField(default=1)
    enabled = models.BooleanField(default=False)
    # The owner whose rights its runs act with: the one who enabled it, on the dashboard or by
    # approving a token's request on the hub.
    enabled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    enabled_at = models.DateTimeField(null=True, blank=True)
    holder = models.CharField(max_length=100, blank=True)
    state = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        indexes = [models.Index(fields=["holder", "enabled"], name="automation_holder")]

    def __str__(self) -> str:
        return self.name


class AutomationVersion(models.Model):
    """Every definition an automation was saved with (restoring one saves it again)."""

    automation = models.ForeignKey(Automation, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    definition = models.JSONField()
    actor = models.CharField(max_length=150, blank=True)
    interface = models.CharField(max_length=16, blank=True)
    saved_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["automation", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["automation", "number"], name="automation_version_unique")
        ]

    def __str__(self) -> str:
        return f"{self.automation} v{self.number}"


class AutomationRun(models.Model):
    """One run: what fired it, each condition's result and each action's outcome (`trace`, a
    list of steps), and how it ended. Kept for AUTOMATION_RUNS_KEEP_DAYS, pruned as the audit
    trail is."""

    class Status(models.TextChoices):
        # The labels are the pages' words (in Spanish, feminine: "una ejecución").
        RUNNING = "running", gettext_lazy("running")
        DONE = "done", gettext_lazy("done")  # every action ran (or, with on_error continue, was tried)
        FAILED = "failed", gettext_lazy("failed")  # an action failed and the automation stops on errors
        SKIPPED = "skipped", gettext_lazy("skipped")  # a condition did not hold
        # the loop guard, a restart or the engine stopping ended it
        STOPPED = "stopped", gettext_lazy("stopped")
        MISSED = "missed", gettext_lazy("missed")  # a schedule due while no engine ran, past the grace window

    automation = models.ForeignKey(Automation, on_delete=models.CASCADE, related_name="runs")
    version = models.PositiveIntegerField(default=1)
    started_at = models.DateTimeField(db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.RUNNING)
    trigger = models.JSONField(default=dict)
    trace = models.JSONField(default=list)
    depth = models.PositiveSmallIntegerField(default=0, help_text="how deep in a chain of automations")
    holder = models.CharField(max_length=100, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["automation", "-started_at"], name="automation_run_time")]

    def __str__(self) -> str:
        return f"{self.automation} {self.started_at:%Y-%m-%d %H:%M:%S} {self.status}"


__all__ = [
    "Automation",
    "AutomationRun",
    "AutomationVersion",
    "EngineHolder",
    "Notification",
    "NotifyTarget",
    "Room",
    "RoomAgent",
    "RoomLight",
    "Scene",
    "ZoneRoom",
]
