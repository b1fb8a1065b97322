"""Admin for the home. State changes (lights, alarm, presence) happen only through actions
that call the services, and lights and people are added, edited and deleted through the audit
trail's services, so every change made here is audited with interface `admin`."""

from typing import Any

from django.contrib import admin, messages
from django.db import transaction

from audit.admin import AuditedAdmin
from audit.models import Event
from devices.home import services, state
from devices.home.models import Alarm, Light, Person

ADMIN = Event.Interface.ADMIN


class HomeRowAdmin(AuditedAdmin):
    def audit_target(self, row: Any) -> tuple[str, dict[str, Any]]:
        transaction.on_commit(state.forget)
        return f"{row._meta.model_name}:{row.name}", {"kind": "home"}


@admin.register(Light)
class LightAdmin(HomeRowAdmin):
    list_display = ["name", "label", "room", "on", "updated_at"]
    list_filter = ["on", "room"]
    search_fields = ["name", "label", "room"]
    readonly_fields = ["on", "updated_at"]
    actions = ["turn_on", "turn_off"]

    def get_readonly_fields(self, request, obj=None):
        # The slug is the tools' identifier: fixed once created.
        return [*self.readonly_fields, "name"] if obj else self.readonly_fields

    @admin.action(description="Turn selected lights on")
    def turn_on(self, request, queryset):
        self._switch(request, queryset, True)

    @admin.action(description="Turn selected lights off")
    def turn_off(self, request, queryset):
        self._switch(request, queryset, False)

    def _switch(self, request, queryset, on: bool) -> None:
        for light in queryset:
            services.set_light_state(light.name, on, actor=request.user.get_username(), interface=ADMIN)
        self.message_user(
            request, f"{len(queryset)} light(s) turned {'on' if on else 'off'}.", messages.SUCCESS
        )


@admin.register(Alarm)
class AlarmAdmin(admin.ModelAdmin):
    list_display = ["__str__", "armed", "updated_at"]
    readonly_fields = ["armed", "updated_at"]
    actions = ["arm", "disarm"]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Arm the alarm")
    def arm(self, request, queryset):
        services.set_alarm_state(True, actor=request.user.get_username(), interface=ADMIN)
        self.message_user(request, "Alarm armed.", messages.SUCCESS)

    @admin.action(description="Disarm the alarm")
    def disarm(self, request, queryset):
        services.set_alarm_state(False, actor=request.user.get_username(), interface=ADMIN)
        self.message_user(request, "Alarm disarmed.", messages.SUCCESS)


@admin.register(Person)
class PersonAdmin(HomeRowAdmin):
    list_display = ["name", "present", "updated_at"]
    list_filter = ["present"]
    search_fields = ["name"]
    readonly_fields = ["present", "updated_at"]
    actions = ["mark_home", "mark_away"]

    @admin.action(description="Mark selected people as home")
    def mark_home(self, request, queryset):
        self._mark(request, queryset, True)

    @admin.action(description="Mark selected people as away")
    def mark_away(self, request, queryset):
        self._mark(request, queryset, False)

    def _mark(self, request, queryset, present: bool) -> None:
        for person in queryset:
            services.set_person_presence(
                person.name, present, actor=request.user.get_username(), interface=ADMIN
            )
        self.message_user(
            request, f"{len(queryset)} person(s) marked {'home' if present else 'away'}.", messages.SUCCESS
        )
