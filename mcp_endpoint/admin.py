"""The MCP engine in the admin: access tokens, outbound endpoints, the OAuth server's clients and
the tool catalogue (every tool the hub offers, its own and its devices', with the owner's settings
of each). Changes made here are audited."""

from typing import Any

from django import forms
from django.apps import apps
from django.conf import settings
from django.contrib import admin, messages
from django.db import transaction
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.views.decorators.debug import sensitive_post_parameters

from audit import services as audit
from audit.admin import AuditedAdmin
from audit.models import Event
from common import roles
from mcp_endpoint.auth.oauth.clients import shown_host
from mcp_endpoint.auth.scopes import scopes
from mcp_endpoint.auth.tokens import create_token, forget, record_token_edit, revoke_all, token_view
from mcp_endpoint.controls import catalogue
from mcp_endpoint.models import AccessToken, OAuthClient, OAuthGrant, OutboundEndpoint, ToolSetting
from mcp_endpoint.transports.outbound import endpoints
from mcp_endpoint.transports.outbound.endpoint_urls import MAX_URL_LENGTH, mask_url, validate_endpoint_url
from mcp_endpoint.transports.outbound.endpoints import parse_tools

ADMIN = Event.Interface.ADMIN


def scope_choices() -> list[tuple[str, str]]:
    """The declared scopes (apps declare theirs after this module is imported)."""
    return [(s.name, f"{s.name}: {s.description}") for s in scopes.all()]


class AccessTokenForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(choices=scope_choices, widget=forms.CheckboxSelectMultiple)

    class Meta:
        model = AccessToken
        fields = ["name", "owner", "scopes", "expires_at", "revoked"]


@admin.register(AccessToken)
class AccessTokenAdmin(admin.ModelAdmin):
    """Tokens are created here with a fresh secret, shown once in a message; only its hash is kept."""

    form = AccessTokenForm
    list_display = [
        "name",
        "key_id",
        "owner",
        "scope_list",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked",
    ]
    list_filter = ["revoked"]
    search_fields = ["name", "key_id", "owner__username"]
    readonly_fields = ["key_id", "created_at", "last_used_at"]
    actions = ["revoke"]

    @admin.display(description="scopes")
    def scope_list(self, obj: AccessToken) -> str:
        return ", ".join(obj.scopes)

    # Beside the admin's own permissions, tokens are an owner's (`common.roles`): a staff
    # account of another household role neither sees nor makes them.
    def has_view_permission(self, request: HttpRequest, obj: AccessToken | None = None) -> bool:
        return roles.can(request.user, roles.MANAGE_TOKENS) and super().has_view_permission(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return roles.can(request.user, roles.MANAGE_TOKENS) and super().has_add_permission(request)

    def has_change_permission(self, request: HttpRequest, obj: AccessToken | None = None) -> bool:
        return roles.can(request.user, roles.MANAGE_TOKENS) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: AccessToken | None = None) -> bool:
        return roles.can(request.user, roles.MANAGE_TOKENS) and super().has_delete_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: AccessToken, form: AccessTokenForm, change: bool) -> None:
        actor = request.user.get_username()
        if change:
            before = token_view(AccessToken.objects.get(pk=obj.pk))
            with transaction.atomic():
                super().save_model(request, obj, form, change)
                record_token_edit(obj, before, actor=actor, interface=ADMIN)
            forget([obj.key_id])  # a revocation or expiry set here applies at once
            return
        token, secret = create_token(
            obj.name,
            form.cleaned_data["scopes"],
            actor=actor,
            interface=ADMIN,
            owner=obj.owner,
            expires_at=obj.expires_at,
        )
        obj.pk = token.pk
        obj.refresh_from_db()
        self.message_user(
            request,
            f"Token for {token.name!r}: {secret} — copy it now, it is not shown again.",
            messages.WARNING,
        )

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[AccessToken]) -> None:
        count = revoke_all(queryset, actor=request.user.get_username(), interface=ADMIN)
        self.message_user(request, f"{count} token(s) revoked.", messages.SUCCESS)


class OutboundEndpointForm(forms.ModelForm):
    """The URL is never shown back (it holds the secret): typed in, and left empty to keep it."""

    url = forms.CharField(
        label="Endpoint URL",
        required=False,
        max_length=MAX_URL_LENGTH,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off", "size": 80}),
        help_text="The wss://…/mcp/?token=… URL of the xiaozhi console (or your own xiaozhi server). "
        "It is a secret: shown masked once saved; leave empty to keep the current one.",
    )
    scopes = forms.MultipleChoiceField(
        choices=scope_choices, widget=forms.CheckboxSelectMultiple, initial=["read", "control"]
    )
    tools = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="The only tools the endpoint sees, comma-separated. Voice assistants break with "
        "too many: keep the few the voice needs.",
    )

    class Meta:
        model = OutboundEndpoint
        fields = ["name", "url", "scopes", "tools", "enabled"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        chosen = self.instance.tools if self.instance.pk else settings.MCP_ENDPOINT_DEFAULT_TOOLS
        self.initial["tools"] = ", ".join(chosen)

    def clean_url(self) -> str:
        url: str = self.cleaned_data.get("url") or ""
        current: str = self.instance.url
        if not url:
            if current:
                return current
            raise forms.ValidationError("Paste the endpoint URL.")
        validate_endpoint_url(url)
        return url

    def clean_tools(self) -> list[str]:
        try:
            return parse_tools(self.cleaned_data.get("tools") or "")
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None


@admin.register(OutboundEndpoint)
class OutboundEndpointAdmin(admin.ModelAdmin):
    """Outbound MCP endpoints (xiaozhi): `serve` keeps each enabled one connected."""

    form = OutboundEndpointForm
    list_display = ["name", "masked_url", "enabled", "status", "calls", "last_call_at", "short_error"]
    list_filter = ["enabled", "connected"]
    search_fields = ["name"]  # never the URL
    readonly_fields = [
        "masked_url",
        "status",
        "connected_since",
        "last_error",
        "calls",
        "last_call_at",
        "holder",
        "held_until",
    ]
    fieldsets = [
        (None, {"fields": ["name", "url", "masked_url", "scopes", "tools", "enabled"]}),
        (
            "Status",
            {
                "fields": [
                    "status",
                    "connected_since",
                    "last_error",
                    "calls",
                    "last_call_at",
                    "holder",
                    "held_until",
                ]
            },
        ),
    ]

    @admin.display(description="URL")
    def masked_url(self, obj: OutboundEndpoint) -> str:
        return mask_url(obj.url) if obj.url else "—"

    @admin.display(description="status")
    def status(self, obj: OutboundEndpoint) -> str:
        if not obj.enabled:
            return "disabled"
        return "connected" if obj.is_connected else "not connected"

    @admin.display(description="last error")
    def short_error(self, obj: OutboundEndpoint) -> str:
        return obj.last_error[:80]

    def save_model(
        self, request: HttpRequest, obj: OutboundEndpoint, form: OutboundEndpointForm, change: bool
    ) -> None:
        with transaction.atomic():
            old = OutboundEndpoint.objects.select_for_update().get(pk=obj.pk) if change else None
            super().save_model(request, obj, form, change)
            endpoints.record_change(obj, old, actor=request.user.get_username(), interface=ADMIN)

    def delete_model(self, request: HttpRequest, obj: OutboundEndpoint) -> None:
        endpoints.delete_endpoints([obj], actor=request.user.get_username(), interface=ADMIN)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[OutboundEndpoint]) -> None:
        endpoints.delete_endpoints(queryset, actor=request.user.get_username(), interface=ADMIN)

    @method_decorator(sensitive_post_parameters("url"))
    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """The URL typed in stays out of error reports (Django's, by mail or on the debug page)."""
        return super().changeform_view(request, object_id, form_url, extra_context)


class ReadOnlyAdminMixin:
    """Shown, never changed here: what changes it has its own door (and its audit)."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class OAuthGrantInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = OAuthGrant
    fields = readonly_fields = ("owner", "scopes", "created_at", "revoked_at")
    extra = 0


@admin.register(OAuthClient)
class OAuthClientAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Every client the OAuth server knows (hosted connectors, by their metadata document or
    registered), with the grants its owners gave it. Access is revoked on the dashboard's
    Connected apps page; a registration nobody authorized is deleted after a day."""

    list_display = ["client_name", "kind", "host", "live_grants", "created_at", "fetched_at"]
    list_filter = ["kind"]
    search_fields = ["client_name", "client_id"]
    fields = readonly_fields = (
        "client_name",
        "client_id",
        "kind",
        "redirect_uris",
        "metadata",
        "created_at",
        "fetched_at",
    )
    inlines = [OAuthGrantInline]

    @admin.display(description="host")
    def host(self, obj: OAuthClient) -> str:
        return shown_host(obj)

    def get_queryset(self, request: HttpRequest) -> QuerySet[OAuthClient]:
        clients: QuerySet[OAuthClient] = super().get_queryset(request)
        return clients.annotate(live=Count("grants", filter=Q(grants__revoked_at=None)))

    @admin.display(description="live grants", ordering="live")
    def live_grants(self, obj: OAuthClient) -> int:
        return int(getattr(obj, "live", 0))  # annotated by get_queryset


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
