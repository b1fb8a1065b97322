"""The audit trail in the admin (read-only, even for superusers), and the base of the admin
pages of the other apps, whose adds, edits and deletes are audited."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Model

from audit import services
from audit.models import Event


class AuditedAdmin(admin.ModelAdmin):
    """Adds, edits and deletes go through `audit.services`, each with its audit event
    named by `audit_target` (target, and how the change is announced)."""

    def audit_target(self, row: Any) -> tuple[str, dict[str, Any]]:
        return f"{row._meta.model_name}:{row.pk}", {"kind": row._meta.model_name}

    def save_model(self, request, obj: Model, form, change) -> None:
        services.save_row(
            obj,
            target=self.audit_target,
            fields=form.changed_data,
            initial=form.initial,
            created=not change,
            actor=request.user.get_username(),
        )

    def delete_model(self, request, obj: Model) -> None:
        services.delete_rows([obj], target=self.audit_target, actor=request.user.get_username())

    def delete_queryset(self, request, queryset) -> None:
        services.delete_rows(queryset, target=self.audit_target, actor=request.user.get_username())


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    """The audit trail is read-only, even for superusers."""

    list_display = ["at", "actor", "interface", "action", "target"]
    list_filter = ["interface", "action"]
    search_fields = ["actor", "target", "action"]
    date_hierarchy = "at"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
