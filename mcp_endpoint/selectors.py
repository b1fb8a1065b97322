"""Reads of the app's own rows that the engine's rooms share: the tasks of the MCP tasks
extension (`engine.tasks_extension`). A task is live until its `expires_at`; an expired row
(waiting for the daily `prune_mcp_tasks`) is read as no task at all."""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import QuerySet
from django.utils import timezone

from mcp_endpoint.models import McpTask


def _live(owner: str) -> QuerySet[McpTask]:
    return McpTask.objects.filter(owner=owner, expires_at__gt=timezone.now())


def live_task(owner: str, task_id: str) -> McpTask | None:
    """`owner`'s live task `task_id`, or None (none, another's, or expired)."""
    return _live(owner).filter(task_id=task_id).first()


def live_tasks(owner: str, task_ids: Sequence[str]) -> list[McpTask]:
    """Those of `task_ids` that are `owner`'s live tasks (in no particular order)."""
    return list(_live(owner).filter(task_id__in=task_ids))


def live_task_ids(owner: str, task_ids: Sequence[str]) -> set[str]:
    """Which of `task_ids` are `owner`'s live tasks."""
    return set(_live(owner).filter(task_id__in=task_ids).values_list("task_id", flat=True))


def active_task_count(owner: str) -> int:
    """How many of `owner`'s live tasks are still working or waiting on their client."""
    return _live(owner).filter(status__in=McpTask.ACTIVE).count()


def task_answers(task_id: str) -> dict[str, dict[str, object]] | None:
    """The answers given so far to the questions task `task_id` waits on, or None once it is
    no longer active (cancelled, or deleted): what its work, asking, looks for."""
    row = McpTask.objects.filter(pk=task_id).values_list("status", "input_responses").first()
    if row is None or row[0] not in McpTask.ACTIVE:
        return None
    return dict(row[1])
