"""A person confirms a dangerous tool call before it runs, and the call holds that person's
confirmation, not its caller's.

Which calls: those of a caller acting on a token (`Caller.confirms`: an LLM client, a script,
an outbound endpoint) that are dangerous (`dangerous`): the tool is destructive and this call
is one of its dangerous ones (`Tool.dangerous_when`: disarming the alarm, not arming it), or the
owner marked the tool in the catalogue. A tool that runs another on the caller's behalf (the
device gateway, a device's tool) has that call judged too, once it has found the tool it
reaches (`ToolContext.confirm`, through the pipeline's `Gate`). A logged-in person's own click
is its own confirmation, and `mcp_stdio` runs as whoever holds the hub's files.

Who confirms: a person on the hub. The call becomes a `PendingConfirmation` (the tool, every
argument, a hash of them) that the owner approves or denies on the dashboard's Requests page
(every open page shows a banner), or on the request's own page, which a client that declared
URL-mode elicitation is handed (`elicitation/create` with `mode: "url"`, then
`notifications/elicitation/complete`). The call waits for the decision, reading the row every
POLL_SECONDS (what every hub process shares), and runs only once it has consumed the approval:
one approval, one run of the exact call it was made for. A token holder's own answer cannot
approve it: whoever holds the token is the client.

Only a tool the owner marks "the client's confirmation is enough" (`Tool.client_confirms`) is
confirmed by the client's own answer (form elicitation). In a stateless 2026-07-28 request that
answer counts only as the answer to the question the hub asked: its key names a `client` row,
found again by the tool and the hash of the exact arguments, and consumed once by an atomic
update; the round's signed `requestState` says which keys the hub asked (`input_rounds`).

Both ways are bounded by MCP_CONFIRMATION_SECONDS. What happened is kept on the call's result
(`ToolResult.confirmation`) for its audit event. Each request made, decided or lapsed is
announced to every process's REQUESTS_GROUP once committed, where the dashboard's open pages
hear it and show it at once; a request made on the hub is also sent as `request_made` (in the
process where the call waits, once), which the household's notifications listen to.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db.models import QuerySet
from django.dispatch import Signal
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.translation import gettext

from common.feed import announce
from mcp_endpoint.engine.tool_errors import ArgumentError, ClientRequestError
from mcp_endpoint.engine.tools import Caller, Tool, ToolContext
from mcp_endpoint.models import PendingConfirmation

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.25
REQUESTS_GROUP = "confirmations"
REQUESTS_CHANGED = "requests.changed"  # the channel-layer message type (`requests_changed`)
# Requests are kept this long after they lapse (their outcome stays in the call's audit event);
# older ones go as new ones are made, so the table stays the size of a week's dangerous calls.
KEEP_ENDED = timedelta(days=7)
APPROVAL_PAGE = "dashboard:request"  # the URL name of a request's own page, when there is one
# Sent with `request` (the PendingConfirmation) once a call starts waiting for a person on the
# hub; a receiver's failure is logged and never stops the call from waiting.
request_made = Signal()

Decision = PendingConfirmation.Decision
Kind = PendingConfirmation.Kind


@dataclass(frozen=True)
class Verdict:
    approved: bool
    how: str  # "approved by ana on the dashboard", "declined in the client"...
    by: str | None = None  # the account of the person on the hub who approved it


def dangerous(tool: Tool, arguments: Any) -> bool:
    """Whether this call of `tool` is dangerous: the owner marked the tool, or it is destructive
    and this call is one of its dangerous ones (arguments it cannot parse count as dangerous)."""
    if tool.needs_confirmation:
        return True
    if not tool.annotations.get("destructiveHint"):
        return False
    if tool.dangerous_when is None:
        return True
    try:
        parsed = tool.parse_arguments(arguments)
    except ArgumentError:
        return True
    return bool(tool.dangerous_when(parsed))


def required(tool: Tool, arguments: Any, caller: Caller) -> bool:
    """Whether `caller`'s call of `tool` with `arguments` waits for a person."""
    return caller.confirms and dangerous(tool, arguments)


def arguments_hash(arguments: Any) -> str:
    """The exact arguments of a call, as a digest an approval is bound to."""
    canonical = json.dumps(arguments if arguments is not None else {}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def summary(tool: Tool, caller: Caller) -> str:
    """Who asks for what, as the person is asked it (the arguments are shown beside it, whole)."""
    return f"{caller.actor} (through {caller.interface}) asks to run {tool.title or tool.name}"


def _question(tool: Tool, arguments: Any, caller: Caller) -> str:
    shown = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
    return f"{summary(tool, caller)} with {shown}."


@dataclass
class Gate:
    """The confirmations of one call through the pipeline: of the tool called, and of any tool
    it runs on the caller's behalf (`ToolContext.confirm`); each tool is asked about once."""

    ctx: ToolContext
    verdicts: list[Verdict] = field(default_factory=list)
    confirmed: set[str] = field(default_factory=set)

    async def check(self, tool: Tool, arguments: Any) -> Verdict | None:
        """A person's verdict on this call of `tool`; None when none is needed (or the arguments
        will be refused anyway). Lets a stateless call's InputRequired through."""
        if tool.name in self.confirmed or not required(tool, arguments, self.ctx.caller):
            return None
        verdict = await ask(tool, arguments, self.ctx)
        if verdict is not None:
            self.verdicts.append(verdict)
            if verdict.approved:
                self.confirmed.add(tool.name)
        return verdict

    def how(self) -> str | None:
        """What the person(s) said, for the audit event; None when nobody was asked."""
        return "; ".join(v.how for v in self.verdicts) or None


async def ask(tool: Tool, arguments: Any, ctx: ToolContext) -> Verdict | None:
    """Ask a person about this call; None when there is nothing to ask (arguments the tool
    will refuse anyway). Lets a stateless call's InputRequired through."""
    try:
        tool.parse_arguments(arguments)
    except ArgumentError:
        return None
    if tool.client_confirms and _can_elicit(ctx, "form"):
        return await _ask_client(tool, arguments, ctx)
    return await _ask_on_hub(tool, arguments, ctx)


def _can_elicit(ctx: ToolContext, mode: str) -> bool:
    """Whether the client declared elicitation in `mode` ("form", "url"). An empty
    `elicitation` capability is form mode (as before 2025-11-25)."""
    declared = ctx.client_capabilities.get("elicitation")
    if not isinstance(declared, dict):
        return False
    if not declared:
        return mode == "form"
    return mode in declared


# --- the client's own answer (tools marked "the client's confirmation is enough") ----------


async def _ask_client(tool: Tool, arguments: Any, ctx: ToolContext) -> Verdict:
    params = {
        "mode": "form",
        "message": f"Confirm: {_question(tool, arguments, ctx.caller)}",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "confirm": {"type": "boolean", "title": "Allow it", "description": "Run this action now"}
            },
            "required": ["confirm"],
        },
    }
    nonce = None
    if ctx.stateless:  # the question is a row: the answer is bound to it, and used once
        nonce, _ = await _request(Kind.CLIENT, tool, arguments, ctx.caller, reuse=True)
    limit = settings.MCP_CONFIRMATION_SECONDS
    key = f"confirm-{nonce}" if nonce is not None else None
    try:
        asking = ctx.request_client("elicitation/create", params, key=key, asked_first=True)
        answer = await asyncio.wait_for(asking, limit)
    except TimeoutError:
        return Verdict(False, f"not answered in the client within {limit:g} s")
    except ClientRequestError as failed:
        return Verdict(False, f"not confirmed in the client ({failed.message})")
    action = answer.get("action")
    content = answer.get("content")
    if action == "accept" and isinstance(content, dict) and content.get("confirm") is True:
        if nonce is not None and not await _use_client_answer(nonce, tool.name, arguments_hash(arguments)):
            return Verdict(False, "not confirmed: the client's answer was used already or lapsed")
        return Verdict(True, "confirmed in the client")
    if nonce is not None:
        await _expire(nonce)
    if action == "cancel":
        return Verdict(False, "cancelled in the client")
    return Verdict(False, "declined in the client")


@sync_to_async
def _use_client_answer(pk: int, tool: str, digest: str) -> bool:
    now = timezone.now()
    return bool(
        PendingConfirmation.objects.filter(
            pk=pk, kind=Kind.CLIENT, tool=tool, arguments_hash=digest, decision=Decision.PENDING
        )
        .filter(expires_at__gt=now)
        .update(decision=Decision.APPROVED, decided_by="the client", decided_at=now, consumed_at=now)
    )


# --- a person on the hub ---------------------------------------------------------------------


async def _ask_on_hub(tool: Tool, arguments: Any, ctx: ToolContext) -> Verdict:
    # A stateless call comes again after its question: it finds the request it made then.
    pk, seconds = await _request(Kind.HUB, tool, arguments, ctx.caller, reuse=ctx.stateless)
    url = approval_url(pk) if _can_elicit(ctx, "url") else None
    asking: asyncio.Future[dict[str, Any]] | None = None
    params: dict[str, Any] = {}
    if url is not None:
        params = {
            "mode": "url",
            "message": f"Approval needed on the hub: {_question(tool, arguments, ctx.caller)}",
            "url": url,
        }
        if ctx.stateless:  # answered by the client's retry; the approval stays on the hub
            answer = await ctx.request_client("elicitation/create", params, key=f"approve-{pk}")
            if answer.get("action") != "accept":
                await _expire(pk)
                return Verdict(False, f"{_refused_in_client(answer)} (the approval page was not opened)")
        else:
            params["elicitationId"] = elicitation_id(pk)
            asking = asyncio.ensure_future(ctx.request_client("elicitation/create", params))
    else:
        where = "on the dashboard" if ctx.stateless else "on the dashboard's Requests page"
        await ctx.log("notice", f"Waiting up to {seconds:g} s for the owner's approval {where}")
    try:
        return await _wait(pk, tool.name, arguments_hash(arguments), seconds, asking)
    finally:  # no answer in time, or the call went away (cancelled): the request lapses
        await _expire(pk)
        if asking is not None:
            if asking.done() and not asking.cancelled():
                asking.exception()  # the client's answer no longer matters
            asking.cancel()
            await _tell_complete(ctx, params["elicitationId"])


async def _tell_complete(ctx: ToolContext, elicitation: str) -> None:
    """The client may drop the approval page's prompt: the request was decided or lapsed. A
    client gone by then hears nothing, and the call's outcome stands."""
    try:
        await ctx.notify("notifications/elicitation/complete", {"elicitationId": elicitation})
    except Exception:  # whatever the transport raises for a stream gone
        logger.debug("could not tell the client that elicitation %s is complete", elicitation)


def _refused_in_client(answer: dict[str, Any]) -> str:
    return "cancelled in the client" if answer.get("action") == "cancel" else "declined in the client"


async def _wait(
    pk: int, tool: str, digest: str, seconds: float, asking: asyncio.Future[dict[str, Any]] | None
) -> Verdict:
    """Read the request's decision until a person takes one or `seconds` pass; an approval is
    consumed by this call. The client's user declining the approval page ends the wait."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        decision, by = await _decision(pk)
        if decision == Decision.APPROVED:
            if await _consume(pk, tool, digest):
                return Verdict(True, f"approved by {by} on the dashboard", by=by)
            return Verdict(False, f"approved by {by}, but that approval was used already")
        if decision == Decision.DENIED:
            return Verdict(False, f"denied by {by} on the dashboard")
        if asking is not None and asking.done() and not asking.cancelled():
            answer = None if asking.exception() is not None else asking.result()
            if answer is not None and answer.get("action") != "accept":
                return Verdict(False, _refused_in_client(answer))
        if loop.time() >= deadline:  # worded as the owner set it (a stateless round waited less)
            return Verdict(
                False, f"not approved on the dashboard within {settings.MCP_CONFIRMATION_SECONDS:g} s"
            )
        await asyncio.sleep(min(POLL_SECONDS, max(0.0, deadline - loop.time())))


@sync_to_async
def _request(kind: str, tool: Tool, arguments: Any, caller: Caller, *, reuse: bool) -> tuple[int, float]:
    """The request for this call (`reuse`: the open one a stateless call's earlier round made
    for the same caller, tool and arguments, if any): its id and the seconds it has left."""
    digest = arguments_hash(arguments)
    now = timezone.now()
    if reuse:
        found = (
            PendingConfirmation.objects.filter(
                kind=kind,
                tool=tool.name,
                arguments_hash=digest,
                actor=caller.actor[:150],
                interface=caller.interface[:32],
                decision__in=[Decision.PENDING, Decision.APPROVED],
                consumed_at=None,
                expires_at__gt=now,
            )
            .order_by("-created_at")
            .values_list("pk", "expires_at")
            .first()
        )
        if found is not None:
            return found[0], (found[1] - now).total_seconds()
    seconds = settings.MCP_CONFIRMATION_SECONDS
    PendingConfirmation.objects.filter(expires_at__lt=now - KEEP_ENDED).delete()
    row = PendingConfirmation.objects.create(
        kind=kind,
        tool=tool.name,
        summary=summary(tool, caller),
        arguments=arguments if isinstance(arguments, dict) else {},
        arguments_hash=digest,
        actor=caller.actor[:150],
        interface=caller.interface[:32],
        expires_at=now + timedelta(seconds=seconds),
    )
    if kind == Kind.HUB:
        _announce()
        for _receiver, outcome in request_made.send_robust(PendingConfirmation, request=row):
            if isinstance(outcome, Exception):
                logger.warning("a receiver of request_made failed: %s", type(outcome).__name__)
    return row.pk, seconds


@sync_to_async
def _decision(pk: int) -> tuple[str, str]:
    row = PendingConfirmation.objects.filter(pk=pk).values_list("decision", "decided_by").first()
    return row if row is not None else (Decision.EXPIRED, "")


@sync_to_async
def _consume(pk: int, tool: str, digest: str) -> bool:
    """Take the approval of request `pk` for this call (its tool and exact arguments); False
    when another call took it first."""
    return bool(
        PendingConfirmation.objects.filter(
            pk=pk, tool=tool, arguments_hash=digest, decision=Decision.APPROVED, consumed_at=None
        ).update(consumed_at=timezone.now())
    )


@sync_to_async
def _expire(pk: int) -> None:
    if PendingConfirmation.objects.filter(pk=pk, decision=Decision.PENDING).update(
        decision=Decision.EXPIRED, decided_at=timezone.now()
    ):
        _announce()


def approval_url(pk: int) -> str | None:
    """Where the owner approves request `pk` (its page, at HUB_URL); None when the hub does not
    know its own address, or has no such page."""
    if not settings.HUB_URL:
        return None
    try:
        return settings.HUB_URL.rstrip("/") + reverse(APPROVAL_PAGE, args=[pk])
    except NoReverseMatch:
        return None


def elicitation_id(pk: int) -> str:
    return f"homehub-request-{pk}"


def decide(pk: int, *, approve: bool, by: str) -> bool:
    """A person's decision on a pending request; False when it is no longer pending (decided,
    or lapsed: the call stopped waiting). The one place an approval is given."""
    decided = (
        _open()
        .filter(pk=pk)
        .update(
            decision=Decision.APPROVED if approve else Decision.DENIED,
            decided_by=by[:150],
            decided_at=timezone.now(),
        )
    )
    if decided:
        _announce()
    return bool(decided)


def _announce() -> None:
    announce(REQUESTS_GROUP, {"type": REQUESTS_CHANGED})


def request_detail(tool: Tool | None, arguments: Any) -> list[tuple[str, str]]:
    """What the tool shows the person deciding its call besides the arguments (its
    `request_detail`: e.g. the automation a call would enable, and its dry run), as (heading,
    text) sections, in the language of the page that shows them; a detail that cannot be made
    is said so, and the arguments still stand."""
    if tool is None or tool.request_detail is None:
        return []
    try:
        return tool.request_detail(tool.parse_arguments(arguments))
    except Exception as exc:  # whatever the app's detail raises: the page must still show
        logger.warning("the detail of a request for %s failed: %s", tool.name, type(exc).__name__)
        return [(gettext("Detail"), gettext("It could not be shown: %(why)s") % {"why": exc})]


def request(pk: int) -> PendingConfirmation | None:
    """A request a person decides (waiting or not), for its own page."""
    return PendingConfirmation.objects.filter(pk=pk, kind=Kind.HUB).first()


def is_open(row: PendingConfirmation) -> bool:
    return row.decision == Decision.PENDING and row.expires_at > timezone.now()


def open_requests() -> list[PendingConfirmation]:
    """The requests waiting for a decision now, oldest first."""
    return list(_open().order_by("created_at"))


def recent_requests(limit: int = 20) -> list[PendingConfirmation]:
    """The latest requests decided or lapsed, newest first."""
    return list(PendingConfirmation.objects.filter(kind=Kind.HUB).exclude(decision=Decision.PENDING)[:limit])


def waiting_count() -> int:
    return _open().count()


def _open() -> QuerySet[PendingConfirmation]:
    return PendingConfirmation.objects.filter(
        kind=Kind.HUB, decision=Decision.PENDING, expires_at__gt=timezone.now()
    )
