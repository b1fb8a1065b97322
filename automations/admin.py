"""Admin for rooms, which room each light and agent is in, the sensor zones' table and scenes;
every add, edit and delete is audited (`AuditedAdmin`). A scene's lights are checked on save
as its service checks them. Automations are read here (each version and run inline); they are
enabled, disabled and deleted through `automations.authoring` (the admin's actions), which
audits each change and tells the engine."""

from collections.abc import Callable
from functools import partial
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from audit.admin import AuditedAdmin
from audit.models import Event
from automations import authoring, services
from automations.errors import AutomationError, SceneError
from automations.models import (
    Automation,
    AutomationRun,
    AutomationVersion,
    Room,
    RoomAgent,
    RoomLight,
    Scene,
    ZoneRoom,
)
from automations.notifications.models import Notification, NotifyTarget
from devices.home.models import Light


class NamedAdmin(AuditedAdmin):
    def audit_target(self, row: Any) -> tuple[str, dict[str, Any]]:
        return f"{row._meta.model_name}:{row}", {"kind": row._meta.model_name}


@admin.register(Room)
class RoomAdmin(NamedAdmin):
    list_display = ["name", "ordering"]
    list_editable = ["ordering"]
    search_fields = ["name"]


# Membership rows each have their own audited admin (inline forms would bypass the audit).
@admin.register(RoomLight)
class RoomLightAdmin(NamedAdmin):
    list_display = ["light", "room"]
    list_filter = ["room"]


@admin.register(RoomAgent)
class RoomAgentAdmin(NamedAdmin):
    list_display = ["agent", "room"]
    list_filter = ["room"]


@admin.register(ZoneRoom)
class ZoneRoomAdmin(NamedAdmin):
    list_display = ["zone", "room"]
    search_fields = ["zone", "room__name"]


class SceneForm(forms.ModelForm):
    class Meta:
        model = Scene
        fields = ["name", "lights", "tool_calls"]

    def clean_lights(self) -> Any:
        lights = self.cleaned_data["lights"]
        if not isinstance(lights, dict) or not all(isinstance(v, bool) for v in lights.values()):
            raise forms.ValidationError("Map light names to true or false.")
        missing = sorted(
            set(lights) - set(Light.objects.filter(name__in=list(lights)).values_list("name", flat=True))
        )
        if missing:
            raise forms.ValidationError(f"Unknown light(s): {', '.join(missing)}.")
        return lights

    def clean_tool_calls(self) -> Any:
        try:
            return services.checked_tool_calls(self.cleaned_data["tool_calls"])
        except SceneError as exc:
            raise forms.ValidationError(str(exc)) from None


@admin.register(Scene)
class SceneAdmin(NamedAdmin):
    form = SceneForm
    list_display = ["name", "updated_at"]
    search_fields = ["name"]


@admin.register(NotifyTarget)
class NotifyTargetAdmin(admin.ModelAdmin):
    """An account's own services. Not an `AuditedAdmin`: its audit event would keep the URLs,
    whose passwords and tokens must not reach the audit trail."""

    list_display = ["account"]
    search_fields = ["account__username"]


@admin.register(Notification)
class NotificationAdmin(admin.ModelAdmin):
    """What the household was told, read-only (the dashboard dismisses)."""

    list_display = ["created_at", "source", "level", "title", "text", "dismissed_at"]
    list_filter = ["source", "level"]

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class VersionInline(ReadOnlyInline):
    model = AutomationVersion
    fields = ("number", "definition", "actor", "interface", "saved_at")
    readonly_fields = fields


class RunInline(ReadOnlyInline):
    model = AutomationRun
    fields = ("started_at", "finished_at", "status", "version", "trigger", "trace")
    readonly_fields = fields
    max_num = 0  # no empty forms

    def get_queryset(self, request: HttpRequest) -> QuerySet[AutomationRun]:
        return super().get_queryset(request).order_by("-started_at")


@admin.register(Automation)
class AutomationAdmin(admin.ModelAdmin):
    """Read-only, but for the actions, which go through `automations.authoring`."""

    list_display = ["name", "enabled", "version", "enabled_by", "enabled_at", "updated_at"]
    list_filter = ["enabled"]
    search_fields = ["name"]
    readonly_fields = [
        "name",
        "definition",
        "version",
        "enabled",
        "enabled_by",
        "enabled_at",
        "holder",
        "state",
    ]
    inlines = [VersionInline, RunInline]
    actions = ["enable", "disable", "delete_through_authoring"]

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def _each(
        self, request: HttpRequest, queryset: QuerySet[Automation], change: Callable[[str], Any], done: str
    ) -> None:
        for name in queryset.values_list("name", flat=True):
            try:
                change(name)
            except AutomationError as exc:
                self.message_user(request, f"{name}: {exc}", messages.ERROR)
            else:
                self.message_user(request, f"{name}: {done}.")

    @admin.action(description="Enable (its runs act with your rights)")
    def enable(self, request: HttpRequest, queryset: QuerySet[Automation]) -> None:
        self._each(request, queryset, partial(self._switch, request, True), "enabled")

    @admin.action(description="Disable")
    def disable(self, request: HttpRequest, queryset: QuerySet[Automation]) -> None:
        self._each(request, queryset, partial(self._switch, request, False), "disabled")

    @staticmethod
    def _switch(request: HttpRequest, enabled: bool, name: str) -> None:
        actor = request.user.get_username()
        authoring.set_enabled(name, enabled, user=request.user, actor=actor, interface=Event.Interface.ADMIN)

    @admin.action(description="Delete, with versions and runs")
    def delete_through_authoring(self, request: HttpRequest, queryset: QuerySet[Automation]) -> None:
        actor = request.user.get_username()
        self._each(
            request,
            queryset,
            lambda name: authoring.delete_automation(name, actor=actor, interface=Event.Interface.ADMIN),
            "deleted",
        )
