"""The tool catalogue in the admin: every tool the hub offers, its own and its devices', with
the owner's settings of each. The model is the MCP engine's (`mcp_endpoint.models.ToolSetting`);
its admin lives here, on top, because its edits are audited (`audit`), which the
engine may not import."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from audit import services as audit
from audit.admin import AuditedAdmin
from mcp_endpoint.controls import catalogue
from mcp_endpoint.models import ToolSetting

TOOL_FIELDS = (
    "name",
    "enabled",
    "needs_confirmation",
    "client_confirms",
    "description",
    "own_description",
    "title",
    "scope",
    "annotation_list",
    "source_label",
    "offered",
    "last_offered_at",
    "updated_at",
    "updated_by",
)
OWNER_SETS = ("enabled", "needs_confirmation", "client_confirms", "description")  # the rest is read only


@admin.register(ToolSetting)
class ToolSettingAdmin(AuditedAdmin):
    """Rows are made from the registry when the list opens: a tool is never added here, and a
    device's tool stays listed (not offered now) while its device is away. Every edit is
    audited and reaches every process's sessions as `notifications/tools/list_changed`."""

    list_display = [
        "name",
        "enabled",
        "needs_confirmation",
        "client_confirms",
        "overridden",
        "scope",
        "annotation_list",
        "source_label",
        "offered",
        "updated_at",
        "updated_by",
    ]
    list_editable = ["enabled", "needs_confirmation", "client_confirms"]
    actions = ["disable", "enable"]
    list_filter = ["enabled", "needs_confirmation", "client_confirms", "scope"]
    search_fields = ["name", "title", "source", "own_description"]
    fields = TOOL_FIELDS
    readonly_fields = [f for f in TOOL_FIELDS if f not in OWNER_SETS]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        catalogue.record_offered_tools()
        return super().changelist_view(request, extra_context)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        obj.updated_at = timezone.now()
        obj.updated_by = request.user.get_username()[:150]
        super().save_model(request, obj, form, change)

    @admin.action(description="Disable selected tools")
    def disable(self, request: HttpRequest, queryset: QuerySet[ToolSetting]) -> None:
        self._switch(request, queryset, False)

    @admin.action(description="Enable selected tools")
    def enable(self, request: HttpRequest, queryset: QuerySet[ToolSetting]) -> None:
        self._switch(request, queryset, True)

    def _switch(self, request: HttpRequest, queryset: QuerySet[ToolSetting], enabled: bool) -> None:
        """One transaction: every process reloads the settings once, and each row is audited."""
        actor = request.user.get_username()
        with transaction.atomic():
            rows = [row for row in queryset.select_for_update() if row.enabled != enabled]
            for row in rows:
                row.enabled, row.updated_at, row.updated_by = enabled, timezone.now(), actor[:150]
                audit.save_row(
                    row,
                    target=self.audit_target,
                    fields=["enabled"],
                    initial={"enabled": not enabled},
                    created=False,
                    actor=actor,
                )
        word = "enabled" if enabled else "disabled"
        self.message_user(request, f"{len(rows)} tool(s) {word}.", messages.SUCCESS)

    def audit_target(self, row: Any) -> tuple[str, dict[str, Any]]:
        catalogue.announce_change()  # in the edit's transaction, as the audit event
        return f"tool:{row.name}", {"kind": "tool"}

    @admin.display(description="description overridden", boolean=True)
    def overridden(self, obj: ToolSetting) -> bool:
        return bool(obj.description)

    @admin.display(description="annotations")
    def annotation_list(self, obj: ToolSetting) -> str:
        hints = [name.removesuffix("Hint") for name, value in (obj.annotations or {}).items() if value]
        return ", ".join(hints) or "—"

    @admin.display(description="source", ordering="source")
    def source_label(self, obj: ToolSetting) -> str:
        """The declaring app by its name ("Home (devices.home)"), or the device."""
        if obj.source.startswith("device "):
            return obj.source
        config = apps.get_containing_app_config(f"{obj.source}.mcp_tools") if obj.source else None
        return f"{config.verbose_name} ({obj.source})" if config else obj.source or "—"

    @admin.display(description="offered now", boolean=True)
    def offered(self, obj: ToolSetting) -> bool:
        return catalogue.offered_now(obj.name)
