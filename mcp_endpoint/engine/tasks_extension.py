"""The MCP tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`): a tool call answered
with a task that the client polls, instead of a result it waits for.

A tool declares whether it runs as a task (`@tool(task_support="optional" | "required")`). When
the client declared the extension (in `initialize`, or in a request's
`_meta["io.modelcontextprotocol/clientCapabilities"]`, SEP-2575), a call of such a tool is
answered at once with a `CreateTaskResult` (`resultType: "task"`), once the task's row is
saved; the work goes on through the same pipeline (scopes, rate limit, a person's
confirmation) and the client follows it with `tasks/get`, answers its questions with
`tasks/update` and stops it with `tasks/cancel`. A client that did not declare the extension
gets an ordinary result, or -32021 for a tool that only runs as a task.

The task's state is in the database (`McpTask`, read through `mcp_endpoint.selectors` and
written through `mcp_endpoint.services`), so every process answers for it; its work
runs on the event loop of the process that took the call (a tool call needs that process's
connections: devices, streams, the confirmation gate's waiters). A task whose process dies
stays `working` until its TTL ends, unless its tool handed the work to a job that outlives
the process (`follow`: the `fel_batch` tool's FEL batch job on Django's Tasks framework): then
the task shows that job's state, read from the job whenever the task is read (the job is its
one writer; the task's row only says which job it follows), and `tasks/cancel` cancels the
job. Only the token (or, without one, the caller) that created
a task sees it: anyone else is told it does not exist.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings

from mcp_endpoint import selectors, services
from mcp_endpoint.engine import jsonrpc, task_changes
from mcp_endpoint.engine.jsonrpc import JsonRpcError
from mcp_endpoint.engine.listen import Offer
from mcp_endpoint.engine.protocol import META_CLIENT_CAPABILITIES
from mcp_endpoint.engine.session_requests import check_declared
from mcp_endpoint.engine.tool_errors import ClientRequestError
from mcp_endpoint.engine.tools import Caller, ClientRequest, ClientRequester, ToolContext
from mcp_endpoint.models import McpTask

logger = logging.getLogger(__name__)

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
POLL_INTERVAL_MS = 500  # what a client is told to wait between two `tasks/get`
# How long a wait for a task's change announced (`task_changes`) lasts before the task is read
# anyway, in case the announcement was lost.
SAFETY_POLL_SECONDS = 5.0

# The work of the tasks this process runs, by task id (kept so that it is not collected, and
# so that `tasks/cancel` reaching this process stops it at once).
_running: dict[str, asyncio.Task[None]] = {}


def declares_tasks(capabilities: Any) -> bool:
    """Whether client capabilities name the extension (under `extensions`)."""
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


def request_declares_tasks(params: dict[str, Any]) -> bool:
    """A request's own opt-in (SEP-2575): the extension in its `_meta` client capabilities."""
    meta = params.get("_meta")
    return isinstance(meta, dict) and declares_tasks(meta.get(META_CLIENT_CAPABILITIES))


def missing_tasks_error(what: str) -> JsonRpcError:
    """-32021, naming the extension as the capability the client must declare."""
    return JsonRpcError(
        jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"Missing required client capability: {what} needs the '{TASKS_EXTENSION}' extension",
        {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
    )


def owner_of(caller: Caller) -> str:
    """Whose a task is: the token's key id, or the caller itself where there is no token."""
    return f"token:{caller.rate_key}" if caller.rate_key else f"{caller.interface}:{caller.actor}"


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _ttl_ms() -> int:
    return int(settings.MCP_TASK_TTL_SECONDS * 1000)


def task_fields(task: McpTask, message: str | None = None) -> dict[str, Any]:
    """The extension's `Task`: what `CreateTaskResult` and `tasks/get` both carry."""
    fields = {
        "taskId": task.task_id,
        "status": task.status,
        "createdAt": _iso(task.created_at),
        "lastUpdatedAt": _iso(task.updated_at),
        "ttlMs": _ttl_ms(),
        "pollIntervalMs": POLL_INTERVAL_MS,
    }
    if message:
        fields["statusMessage"] = message
    return fields


def detailed_task(task: McpTask, message: str | None = None) -> dict[str, Any]:
    """`tasks/get`'s answer: the task, with its questions, result or error inlined."""
    answer = {"resultType": "complete", **task_fields(task, message)}
    if task.status == McpTask.INPUT_REQUIRED:
        answer["inputRequests"] = task.input_requests
    elif task.status == McpTask.COMPLETED and task.result is not None:
        answer["result"] = task.result
    elif task.status == McpTask.FAILED and task.error is not None:
        answer["error"] = task.error
    return answer


@dataclass(frozen=True)
class Followed:
    """A job's state as the task following it shows it: `status` one of McpTask's, `message`
    the task's `statusMessage` ("12 of 60 files"), `result` the tool's MCP result once
    completed, `error` a JSON-RPC error object once failed."""

    status: str
    updated_at: datetime
    message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


@dataclass(frozen=True)
class Follower:
    """How tasks follow one kind of job: its state (read only; None once the job is gone) and
    its cancellation, both by the job's reference, both sync (they run in a worker thread)."""

    state: Callable[[str], Followed | None]
    cancel: Callable[[str], None]


# The kinds of job a task may follow, filled by the apps that own them (as they add tools):
# the engine cannot import those apps.
_followers: dict[str, Follower] = {}


def register_follower(
    kind: str, *, state: Callable[[str], Followed | None], cancel: Callable[[str], None]
) -> None:
    """Let tasks follow jobs of `kind` (`follow`)."""
    _followers[kind] = Follower(state, cancel)


def follow(task_id: str, kind: str, ref: str) -> None:
    """Hand task `task_id` (`ToolContext.task_id`) to job `ref` of `kind`, from a sync tool, in
    the transaction that records the job (so that the two are saved together): from then on
    the job tells the task's state and `tasks/cancel` cancels it, and what the call itself
    returns is not kept."""
    if kind not in _followers:
        raise LookupError(f"no follower registered for {kind!r} jobs")
    services.follow_job(task_id, f"{kind}:{ref}")


def _followed(follows: str) -> Followed | None:
    kind, _, ref = follows.partition(":")
    follower = _followers.get(kind)
    return follower.state(ref) if follower is not None else None


def _cancel_followed(follows: str) -> None:
    kind, _, ref = follows.partition(":")
    follower = _followers.get(kind)
    if follower is not None:
        follower.cancel(ref)


async def current(task: McpTask) -> tuple[McpTask, str | None]:
    """The task as it stands now, and its status message: one that follows a job (and was not
    cancelled) shows the job's state, read now and never written back."""
    if not task.follows or task.status not in McpTask.ACTIVE:
        return task, None
    followed = await sync_to_async(_followed)(task.follows)
    if followed is None:
        gone = JsonRpcError(jsonrpc.INTERNAL_ERROR, "Internal error: the task's job is gone")
        followed = Followed(McpTask.FAILED, task.updated_at, error=gone.as_error())
    task.status, task.result, task.error = followed.status, followed.result, followed.error
    task.updated_at = max(task.updated_at, followed.updated_at)
    return task, followed.message


async def show(task: McpTask) -> dict[str, Any]:
    """`tasks/get`'s answer for the caller's task."""
    return detailed_task(*await current(task))


def _unknown(task_id: Any) -> JsonRpcError:
    return JsonRpcError(jsonrpc.INVALID_PARAMS, f"Invalid params: unknown task {task_id!r}")


def task_id_of(params: dict[str, Any]) -> str:
    task_id = params.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise JsonRpcError(jsonrpc.INVALID_PARAMS, "Invalid params: 'taskId' (a string) is required")
    return task_id


async def create(caller: Caller, tool: str) -> McpTask:
    """Save a new working task: only then may it be announced. (Expired ones are left to the
    daily `prune_mcp_tasks`; until then every read takes them for unknown.)"""
    return await sync_to_async(services.create_task)(owner_of(caller), tool)


async def active_count(caller: Caller) -> int:
    """How many of the caller's tasks are still working or waiting on it."""
    return await sync_to_async(selectors.active_task_count)(owner_of(caller))


async def get(caller: Caller, task_id: str) -> McpTask:
    """The caller's live task `task_id`; -32602 when there is none (or it is another's, or
    expired)."""
    task = await sync_to_async(selectors.live_task)(owner_of(caller), task_id)
    if task is None:
        raise _unknown(task_id)
    return task


async def own_live(caller: Caller, task_ids: Sequence[str]) -> list[str]:
    """Those of `task_ids` that are the caller's live tasks, in the order asked."""
    own = await sync_to_async(selectors.live_task_ids)(owner_of(caller), task_ids)
    return [task_id for task_id in dict.fromkeys(task_ids) if task_id in own]


async def watch(caller: Caller, task_ids: Sequence[str], offer: Offer) -> None:
    """Status notifications for a `subscriptions/listen` stream (`notifications/tasks`, each the
    task as `tasks/get` shows it then): the tasks are read again whenever one is announced
    changed, whichever process changes it, and each change is offered once; it ends when
    they are all over (or gone, or expired). A job's progress is not announced: while one of
    them follows a job, or a change could not be offered yet, they are read every
    `pollIntervalMs` as well."""
    offered: dict[str, tuple[str, datetime]] = {}
    watched = list(task_ids)
    async with task_changes.changes(task_ids) as changed:
        while watched:
            rows = await sync_to_async(selectors.live_tasks)(owner_of(caller), watched)
            tasks = [await current(row) for row in rows]
            watched, soon = [], False
            for task, message in tasks:
                state = (task.status, task.updated_at)
                if offered.get(task.task_id) != state and offer(
                    "notifications/tasks", _notification(task, message)
                ):
                    offered[task.task_id] = state
                unsent = offered.get(task.task_id) != state
                if task.status in McpTask.ACTIVE or unsent:
                    watched.append(task.task_id)
                    soon = soon or unsent or bool(task.follows)
            if watched:
                wait = POLL_INTERVAL_MS / 1000 if soon else SAFETY_POLL_SECONDS
                await task_changes.changed_or_after(changed, wait)


def _notification(task: McpTask, message: str | None) -> dict[str, Any]:
    params = detailed_task(task, message)
    del params["resultType"]
    return params


async def cancel(caller: Caller, task_id: str) -> None:
    """Mark the caller's task cancelled (a finished one stays as it is) and stop its work if
    this process runs it; elsewhere the work finds out at its next question and its result
    is not kept. A task that follows a job cancels the job (unless the job is over: then the
    task shows how it ended)."""
    task, _ = await current(await get(caller, task_id))
    if task.status not in McpTask.ACTIVE:
        return
    cancelled = await sync_to_async(services.cancel_task)(task.task_id)
    if cancelled and task.follows:
        await sync_to_async(_cancel_followed)(task.follows)
    work = _running.get(task_id)
    if work is not None:
        work.cancel()


async def update(caller: Caller, task_id: str, responses: Any) -> None:
    """`tasks/update`: answers to some or all of the questions the task waits on (keys it did
    not ask are ignored); the task works again once every question is answered."""
    if not isinstance(responses, dict) or not all(isinstance(v, dict) for v in responses.values()):
        raise JsonRpcError(
            jsonrpc.INVALID_PARAMS, "Invalid params: 'inputResponses' must map keys to result objects"
        )
    if not await sync_to_async(services.answer)(owner_of(caller), task_id, responses):
        raise _unknown(task_id)


def asker(task_id: str, declared: dict[str, Any]) -> ClientRequester:
    """A task's way of asking its client (`ToolContext.send_request`): the questions are put
    on the task (`input_required`, with server-minted keys), and the work waits for
    `tasks/update` to answer them all, up to MCP_CLIENT_REQUEST_TIMEOUT_SECONDS (reading them
    whenever the task is announced changed)."""

    async def ask(requests: Sequence[ClientRequest]) -> list[dict[str, Any]]:
        check_declared(requests, declared)
        keys = [f"{request.key or 'input'}-{secrets.token_hex(4)}" for request in requests]
        asked = {key: {"method": r.method, "params": r.params} for key, r in zip(keys, requests, strict=True)}
        async with task_changes.changes([task_id]) as changed:
            await sync_to_async(services.ask)(task_id, asked)
            deadline = time.monotonic() + settings.MCP_CLIENT_REQUEST_TIMEOUT_SECONDS
            while (left := deadline - time.monotonic()) > 0:
                answers = await sync_to_async(selectors.task_answers)(task_id)
                if answers is None:
                    raise ClientRequestError("The task was cancelled while it waited for the client")
                if all(key in answers for key in keys):
                    return [answers[key] for key in keys]
                await task_changes.changed_or_after(changed, min(left, SAFETY_POLL_SECONDS))
        raise ClientRequestError("The client did not answer the task's question in time")

    return ask


class Route:
    """Where a call that may become a task (`ToolContext.continue_as_task`) sends its
    questions, progress and logs: to the request, then, once it is a task, its questions to
    the task and nothing else anywhere (the request's stream is over)."""

    def __init__(self, request_ctx: ToolContext) -> None:
        self.request_ctx = request_ctx
        self.task_asker: ClientRequester | None = None

    def to_task(self, task_id: str, declared: dict[str, Any]) -> None:
        self.task_asker = asker(task_id, declared)

    def context(self, hand_off: Callable[[], Awaitable[None]]) -> ToolContext:
        return replace(
            self.request_ctx,
            send_request=self.ask,
            send_progress=self.progress,
            send_log=self.log,
            send_handoff=hand_off,
        )

    async def ask(self, requests: Sequence[ClientRequest]) -> list[dict[str, Any]]:
        if self.task_asker is not None:
            return await self.task_asker(requests)
        return await self.request_ctx.send_request(requests)

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        if self.task_asker is None:
            await self.request_ctx.send_progress(progress, total, message)

    async def log(self, level: str, data: Any, logger: str | None) -> None:
        if self.task_asker is None:
            await self.request_ctx.send_log(level, data, logger)


def start(task_id: str, work: Awaitable[dict[str, Any]]) -> None:
    """Run a task's work (a coroutine giving the tool's MCP result, or raising JsonRpcError
    for a protocol-level failure) in this process, keeping its outcome on the task."""

    finish = sync_to_async(services.finish_task)

    async def run() -> None:
        try:
            result = await work
        except asyncio.CancelledError:
            return  # `tasks/cancel` marked it already
        except JsonRpcError as failure:
            await finish(task_id, McpTask.FAILED, error=failure.as_error())
        except Exception:
            logger.exception("task %s failed", task_id)
            internal = JsonRpcError(jsonrpc.INTERNAL_ERROR, "Internal error")
            await finish(task_id, McpTask.FAILED, error=internal.as_error())
        else:
            await finish(task_id, McpTask.COMPLETED, result=result)
        finally:
            _running.pop(task_id, None)

    _running[task_id] = asyncio.ensure_future(run())
