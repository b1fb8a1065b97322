from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from mcp_endpoint.models import AccessToken
from mcp_endpoint.scopes import scopes
from mcp_endpoint.tokens import create_token, forget, revoke_all


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

    def save_model(self, request: HttpRequest, obj: AccessToken, form: AccessTokenForm, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            forget([obj.key_id])  # a revocation or expiry set here applies at once
            return
        token, secret = create_token(
            obj.name, form.cleaned_data["scopes"], owner=obj.owner, expires_at=obj.expires_at
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
        count = revoke_all(queryset)
        self.message_user(request, f"{count} token(s) revoked.", messages.SUCCESS)
