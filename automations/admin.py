from __future__ import annotations

from django.contrib import admin

from automations.notifications.models import Notification, NotifyTarget


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
