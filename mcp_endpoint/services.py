"""Writes of the app's own rows that the engine's rooms share: the tasks of the MCP tasks
extension (`engine.tasks_extension`), which any hub process may change (the one running the
work, the one a client's `tasks/update` or `tasks/cancel` reached, a job's worker linking
it). Every change but the answers' is one conditional UPDATE, so a task cancelled meanwhile
stays cancelled, and each change is announced on TASKS_GROUP once it commits, for the work
waiting on its answers and the streams watching it (`engine.task_changes`). Tasks are not
audited here: the tool call they carry is, by the pipeline."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from common.feed import announce
from common.pruning import delete_in_chunks
from mcp_endpoint.models import McpTask

TASKS_GROUP = "mcp.tasks"
TASK_CHANGED = "mcp.task_changed"  # {"task": task_id}


def _changed(task_id: str) -> None:
    announce(TASKS_GROUP, {"type": TASK_CHANGED, "task": task_id})


def create_task(owner: str, tool: str) -> McpTask:
    """A new working task of `owner` for a call of `tool`, live for MCP_TASK_TTL_SECONDS."""
    return McpTask.objects.create(
        task_id=secrets.token_urlsafe(16),
        owner=owner,
        tool=tool,
        expires_at=timezone.now() + timedelta(seconds=settings.MCP_TASK_TTL_SECONDS),
    )


def follow_job(task_id: str, follows: str) -> None:
    """Link active task `task_id` to the job `follows` ("<kind>:<ref>") that tells its state."""
    if McpTask.objects.filter(pk=task_id, status__in=McpTask.ACTIVE).update(
        follows=follows, updated_at=timezone.now()
    ):
        _changed(task_id)


def ask(task_id: str, asked: dict[str, dict[str, Any]]) -> None:
    """Put questions (key -> {method, params}) on active task `task_id`: it waits on its client."""
    if McpTask.objects.filter(pk=task_id, status__in=McpTask.ACTIVE).update(
        status=McpTask.INPUT_REQUIRED, input_requests=asked, updated_at=timezone.now()
    ):
        _changed(task_id)


def answer(owner: str, task_id: str, responses: dict[str, Any]) -> bool:
    """Keep the answers to those of `owner`'s live task's questions that `responses` answers
    (other keys are ignored); it works again once none is left. False when there is no such
    task; True otherwise, even when it asks nothing (answers to nothing are ignored)."""
    with transaction.atomic():
        task = (
            McpTask.objects.select_for_update()
            .filter(task_id=task_id, owner=owner, expires_at__gt=timezone.now())
            .first()
        )
        if task is None:
            return False
        if task.status != McpTask.INPUT_REQUIRED:
            return True
        answered = {key: value for key, value in responses.items() if key in task.input_requests}
        task.input_responses = {**task.input_responses, **answered}
        task.input_requests = {k: v for k, v in task.input_requests.items() if k not in answered}
        if not task.input_requests:
            task.status = McpTask.WORKING
        task.save(update_fields=["input_responses", "input_requests", "status", "updated_at"])
        _changed(task_id)
        return True


def cancel_task(task_id: str) -> bool:
    """Mark task `task_id` cancelled, its questions and answers dropped; False when it was no
    longer active (a finished task stays as it ended)."""
    cancelled = McpTask.objects.filter(pk=task_id, status__in=McpTask.ACTIVE).update(
        status=McpTask.CANCELLED, input_requests={}, input_responses={}, updated_at=timezone.now()
    )
    if cancelled:
        _changed(task_id)
    return bool(cancelled)


def finish_task(
    task_id: str, status: str, *, result: dict[str, Any] | None = None, error: dict[str, Any] | None = None
) -> None:
    """Keep the outcome of task `task_id`'s work (`status` completed or failed, with its result
    or error), unless the task was cancelled meanwhile or follows a job (which tells its
    outcome); the client's answers are not kept past the work that needed them."""
    if McpTask.objects.filter(pk=task_id, status__in=McpTask.ACTIVE, follows="").update(
        status=status,
        result=result,
        error=error,
        input_requests={},
        input_responses={},
        updated_at=timezone.now(),
    ):
        _changed(task_id)


def prune_expired_tasks() -> int:
    """Delete the tasks past their `expires_at` (already unknown to every `tasks/*` method),
    in short transactions; how many. Run daily by `prune_mcp_tasks`."""
    return delete_in_chunks(McpTask.objects.filter(expires_at__lte=timezone.now()))
