"""The tables of the database channel layer (`common.layers`): the hub processes that listen,
and the messages one process leaves for the others."""

from django.db import models


class FeedProcess(models.Model):
    """A hub process that hears the others' messages; it says so every few seconds."""

    name = models.CharField(max_length=32, unique=True)
    host = models.CharField(max_length=255, blank=True)
    pid = models.IntegerField()
    started_at = models.DateTimeField()
    seen_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.name} (pid {self.pid} on {self.host})"


class FeedMessage(models.Model):
    """A message for the other processes: to a group (`group`, every process delivers it to
    its own members) or to one process's channel (`channel`). Kept for a minute."""

    origin = models.CharField(max_length=32)
    group = models.CharField(max_length=100, blank=True)
    channel = models.CharField(max_length=200, blank=True)
    message = models.JSONField()
    at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.origin} -> {self.group or self.channel}"
