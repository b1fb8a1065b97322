"""The home: lights, the alarm and the people who live there.

Rows change only through `devices.home.services`, which audits and announces each change.
The tables keep the names they had when the home was part of the `devices` app.
"""

from django.db import models


class Light(models.Model):
    name = models.SlugField(max_length=64, unique=True, help_text="Stable id used by tools, e.g. 'salon'.")
    label = models.CharField(max_length=100, blank=True)
    room = models.CharField(max_length=100, blank=True)
    on = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "devices_light"
        ordering = ["id"]

    def __str__(self) -> str:
        return self.label or self.name


class Alarm(models.Model):
    """The house alarm: a single row (pk 1), created on first use."""

    armed = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    SINGLETON_PK = 1

    class Meta:
        db_table = "devices_alarm"

    def __str__(self) -> str:
        return "Alarm (armed)" if self.armed else "Alarm (disarmed)"


class Person(models.Model):
    name = models.CharField(max_length=100, unique=True)
    present = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "devices_person"
        ordering = ["id"]
        verbose_name_plural = "people"

    def __str__(self) -> str:
        return self.name
