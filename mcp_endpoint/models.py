"""Access tokens for LLM agents. Only a hash of each secret is stored."""

from django.conf import settings
from django.db import models
from django.utils import timezone


class AccessToken(models.Model):
    name = models.CharField(max_length=100)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="mcp_tokens"
    )
    key_id = models.CharField(
        max_length=16, unique=True, editable=False, help_text="Public part of the token."
    )
    secret_hash = models.CharField(max_length=64, editable=False)
    scopes = models.JSONField(default=list, help_text="Names of declared scopes (mcp_endpoint.scopes).")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} (hh_{self.key_id}_…)"

    @property
    def is_active(self) -> bool:
        return not self.revoked and (self.expires_at is None or self.expires_at > timezone.now())


class McpSession(models.Model):
    """A Streamable HTTP session of the handshake era, visible to every hub process."""

    session_id = models.CharField(max_length=64, unique=True)
    token = models.ForeignKey(AccessToken, on_delete=models.CASCADE, related_name="sessions")
    state = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)
    last_active = models.DateTimeField(default=timezone.now)
    ended = models.BooleanField(default=False)

    class Meta:
        indexes = [
            # Serves both the open-session count (`ended` false, `last_active` since the idle
            # cut-off) and the purge (`last_active` before its cut-off) as one range each,
            # without reading the table (see http_sessions.count_open and .purge).
            models.Index(fields=["last_active", "ended"], name="mcp_session_activity"),
        ]

    def __str__(self) -> str:
        return f"{self.session_id[:8]}… ({self.token.name})"
