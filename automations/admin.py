"""Admin for rooms, which room each light and agent is in, the sensor zones' table and scenes;
every add, edit and delete is audited (`AuditedAdmin`). A scene's lights are checked on save
as its service checks them."""

from typing import Any

from django import forms
from django.contrib import admin

from audit.admin import AuditedAdmin
from automations import services
from automations.errors import SceneError
from automations.models import Room, RoomAgent, RoomLight, Scene, ZoneRoom
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
