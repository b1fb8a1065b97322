"""Access tokens for LLM agents (only a hash of each secret is stored), their HTTP sessions, the
outbound endpoints the hub serves, the hub's OAuth server's clients, grants, codes and refresh
tokens (hashed too; see `mcp_endpoint.auth.oauth`), and the owner's settings of tools (the catalogue)."""

import json

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy

from mcp_endpoint.transports.outbound.endpoint_urls import validate_endpoint_url


class AccessToken(models.Model):
    name = models.CharField(max_length=100)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="mcp_tokens"
    )
    key_id = models.CharField(
        max_length=16, unique=True, editable=False, help_text="Public part of the token."
    )
    secret_hash = models.CharField(max_length=64, editable=False)
    scopes = models.JSONField(default=list, help_text="Names of declared scopes (mcp_endpoint.auth.scopes).")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked = models.BooleanField(default=False)
    # Set on the one token an OAuth grant issues (its secret changes at each refresh); static
    # tokens (`create_mcp_token`, the admin) have neither.
    grant = models.ForeignKey(
        "OAuthGrant", null=True, blank=True, on_delete=models.CASCADE, related_name="access_tokens"
    )
    resource = models.CharField(
        max_length=2000, blank=True, help_text="The only resource (RFC 8707) the token is for; blank: any."
    )

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


class OutboundEndpoint(models.Model):
    """An MCP endpoint the hub connects out to and serves as an MCP server: a xiaozhi
    `wss://…/mcp/?token=…` URL, whose far side is the MCP client (a voice assistant). The URL
    holds a secret: shown masked (`endpoint_urls.mask_url`), never logged.

    The status fields are written by the one hub process holding the connection (`holder`,
    a lease renewed every MCP_ENDPOINT_POLL_SECONDS and lapsing at `held_until`; see
    `mcp_endpoint.transports.outbound.supervisor`)."""

    name = models.CharField(
        max_length=100, unique=True, help_text="Shown in the audit trail as the actor of its calls."
    )
    url = models.CharField(max_length=2000, validators=[validate_endpoint_url])
    scopes = models.JSONField(default=list, help_text="Names of declared scopes (mcp_endpoint.auth.scopes).")
    tools = models.JSONField(
        default=list, help_text="Names of the only tools the endpoint sees and may call (within its scopes)."
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    connected = models.BooleanField(default=False, editable=False)
    connected_since = models.DateTimeField(null=True, blank=True, editable=False)
    last_error = models.TextField(blank=True, editable=False)
    calls = models.PositiveBigIntegerField(default=0, editable=False, help_text="tools/call requests served.")
    last_call_at = models.DateTimeField(null=True, blank=True, editable=False)
    holder = models.CharField(max_length=100, blank=True, editable=False)
    held_until = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name  # never the URL: it holds the secret

    @property
    def is_connected(self) -> bool:
        """Connected, by a process whose lease has not lapsed (a killed process cannot say)."""
        return self.connected and self.held_until is not None and self.held_until > timezone.now()


class OAuthClient(models.Model):
    """A client of the hub's OAuth server: a Client ID Metadata Document's URL (the document is
    fetched and kept for MCP_OAUTH_CLIENT_CACHE_SECONDS) or an id given by dynamic registration."""

    class Kind(models.TextChoices):
        DOCUMENT = "document"
        REGISTERED = "registered"

    client_id = models.CharField(max_length=2000, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    client_name = models.CharField(max_length=200, blank=True)
    redirect_uris = models.JSONField(default=list)
    metadata = models.JSONField(default=dict, help_text="The document or registration as received.")
    fetched_at = models.DateTimeField(null=True, blank=True, help_text="When the document was read.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["client_name", "client_id"]

    def __str__(self) -> str:
        return self.client_name or self.client_id


class OAuthGrant(models.Model):
    """An owner's consent to one client: the scopes it may use at one resource. Its access token
    and its refresh tokens (one family) descend from it; revoking it ends them all."""

    client = models.ForeignKey(OAuthClient, on_delete=models.CASCADE, related_name="grants")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oauth_grants")
    scopes = models.JSONField(default=list)
    resource = models.CharField(max_length=2000)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.client} for {self.owner}"


class AuthorizationCode(models.Model):
    """A code the authorization endpoint handed out: single use, short-lived, bound to its PKCE
    challenge and redirect URI; only its hash is stored."""

    code_hash = models.CharField(max_length=64, unique=True)
    grant = models.ForeignKey(OAuthGrant, on_delete=models.CASCADE, related_name="codes")
    redirect_uri = models.CharField(max_length=2000)
    code_challenge = models.CharField(max_length=128)
    code_challenge_method = models.CharField(max_length=8)
    expires_at = models.DateTimeField()
    used = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"code of {self.grant}"


class RefreshToken(models.Model):
    """One refresh token of a grant's family; `used` once exchanged (rotation): presenting it
    again revokes the grant. Only its hash is stored."""

    token_hash = models.CharField(max_length=64, unique=True)
    grant = models.ForeignKey(OAuthGrant, on_delete=models.CASCADE, related_name="refresh_tokens")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"refresh token of {self.grant}"


class ToolSetting(models.Model):
    """One tool of the catalogue: the owner's settings of it (`enabled`, `description`,
    `needs_confirmation`), applied by every process's registry (`mcp_endpoint.controls.catalogue`),
    and what was last known of the tool, so that a device's tool shows while its device is
    away. A row is made for every tool the hub offers when the catalogue is looked at."""

    name = models.CharField(max_length=64, unique=True)
    enabled = models.BooleanField(
        default=True, help_text="A disabled tool is neither listed nor callable, through any door."
    )
    description = models.TextField(
        "description override",
        blank=True,
        help_text="Shown in tools/list instead of the tool's own; blank: its own.",
    )
    needs_confirmation = models.BooleanField(
        default=False,
        help_text="Every call on a token's behalf waits for a person's approval on the hub.",
    )
    client_confirms = models.BooleanField(
        "the client's confirmation is enough",
        default=False,
        help_text="A dangerous call is run on the client's own confirmation (its user answering "
        "the client's prompt), instead of waiting for a person's approval on the hub. Only for "
        "tools whose client you trust to ask a person: a token holder can answer for itself.",
    )
    updated_at = models.DateTimeField(null=True, blank=True, editable=False)
    updated_by = models.CharField(max_length=150, blank=True, editable=False)

    # What was last known of the tool (written when the catalogue is looked at).
    title = models.CharField(max_length=200, blank=True, editable=False)
    own_description = models.TextField(blank=True, editable=False)
    scope = models.CharField(max_length=50, blank=True, editable=False)
    annotations = models.JSONField(default=dict, blank=True, editable=False)
    source = models.CharField(max_length=200, blank=True, editable=False)
    last_offered_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["name"]
        verbose_name = "tool"
        verbose_name_plural = "tool catalogue"

    def __str__(self) -> str:
        return self.name


class PendingConfirmation(models.Model):
    """A dangerous tool call waiting for a person: who asked, through which door, for what
    exact call (the tool and a hash of its arguments), and what became of it. The waiting call
    reads `decision` until it changes or MCP_CONFIRMATION_SECONDS pass, and runs only once it
    consumed the approval (`consumed_at`): one approval, one run of the call it was made for.

    A `hub` request is decided by a person on the hub (the Requests page, or its own approval
    page handed to the client as a URL). A `client` one is the question the hub asked a client
    whose answer is enough for the tool (the catalogue's mark): a nonce, used once, that binds
    a stateless client's answer to the question, the tool and the arguments."""

    class Kind(models.TextChoices):
        HUB = "hub"
        CLIENT = "client"

    class Decision(models.TextChoices):
        # The labels are the Requests pages' words (a request is "solicitud": feminine in Spanish).
        PENDING = "pending", gettext_lazy("Pending")
        APPROVED = "approved", gettext_lazy("Approved")
        DENIED = "denied", gettext_lazy("Denied")
        EXPIRED = "expired", gettext_lazy("Expired")  # no answer in time, or the call went away first

    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.HUB)
    tool = models.CharField(max_length=64)
    summary = models.TextField(help_text="What will happen, in words.")
    arguments = models.JSONField(default=dict)
    arguments_hash = models.CharField(max_length=64, blank=True)
    actor = models.CharField(max_length=150)
    interface = models.CharField(max_length=32)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    decision = models.CharField(max_length=16, choices=Decision.choices, default=Decision.PENDING)
    decided_by = models.CharField(max_length=150, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    consumed_at = models.DateTimeField(null=True, blank=True)  # the call it was made for ran

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["decision", "created_at"], name="mcp_confirmation_open")]

    def __str__(self) -> str:
        return f"{self.tool} for {self.actor} ({self.decision})"

    def arguments_shown(self) -> str:
        """Every argument of the call, as JSON laid out for a person to read (never cut)."""
        return json.dumps(self.arguments, indent=2, ensure_ascii=False, sort_keys=True)


class RateCount(models.Model):
    """How much of one budget (`mcp_endpoint.auth.ratelimit`: a token's tool calls, an address's
    registrations) the hub processes have taken in one fixed window, when they share no Redis."""

    key = models.CharField(max_length=255)
    window = models.BigIntegerField(help_text="The window's number: its start (Unix seconds) / its length.")
    count = models.BigIntegerField(default=0)
    ends_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["key", "window"], name="mcp_rate_count_once")]

    def __str__(self) -> str:
        return f"{self.key} #{self.window}: {self.count}"


class McpTask(models.Model):
    """One tool call answered with a task (the MCP tasks extension, SEP-2663;
    `mcp_endpoint.engine.tasks_extension`): its state, kept here so that any process serving
    the hub answers `tasks/get` and `tasks/cancel` for it, whichever process runs its work."""

    WORKING, INPUT_REQUIRED = "working", "input_required"
    COMPLETED, FAILED, CANCELLED = "completed", "failed", "cancelled"
    ACTIVE = (WORKING, INPUT_REQUIRED)

    task_id = models.CharField(max_length=64, primary_key=True)
    # Who may see and cancel it: the token's key id (or the caller's actor for a door without
    # a token); anyone else is told the task does not exist.
    owner = models.CharField(max_length=255, db_index=True)
    tool = models.CharField(max_length=64)
    status = models.CharField(max_length=20, default=WORKING)
    result = models.JSONField(null=True, blank=True)  # the tool's result, once completed
    error = models.JSONField(null=True, blank=True)  # a JSON-RPC error object, once failed
    # The questions the work waits on (key -> {method, params}), and the answers given to them.
    input_requests = models.JSONField(default=dict)
    input_responses = models.JSONField(default=dict)
    # The job of another app the task's work was handed to ("<kind>:<ref>", e.g. a FEL batch
    # job), which then tells its state (`tasks_extension.register_follower`); empty when the
    # work runs in the process that took the call.
    follows = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.tool} task {self.task_id} ({self.status})"
