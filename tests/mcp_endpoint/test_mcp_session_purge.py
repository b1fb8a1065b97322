"""Purging MCP Streamable HTTP sessions: which rows go and which stay, what a client coming
back with a purged id sees, the command the daily unit runs, and the index that keeps the
open-session count (`/metrics`) and the purge off a full scan."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from mcp_endpoint.auth.tokens import create_token
from mcp_endpoint.models import AccessToken, McpSession
from mcp_endpoint.transports import http_sessions
from tests.mcp_endpoint.test_limits import PING, mcp_post, request, session_of
from tests.mcp_helpers import LEGACY_INIT

DAY = timedelta(days=1)


@pytest.fixture
def token(db, settings) -> AccessToken:
    settings.MCP_SESSION_IDLE_SECONDS = 3600
    return create_token("agent", ["read"], actor="test", interface="system")[0]


def session(token: AccessToken, name: str, unused: timedelta, ended: bool = False) -> None:
    """A session last used `unused` ago."""
    McpSession.objects.create(session_id=name, token=token, last_active=timezone.now() - unused, ended=ended)


def remaining() -> set[str]:
    return set(McpSession.objects.values_list("session_id", flat=True))


def test_sessions_over_for_longer_than_the_grace_go_open_and_recent_ones_stay(token):
    session(token, "open", timedelta(minutes=5))
    session(token, "deleted-a-minute-ago", timedelta(minutes=1), ended=True)
    session(token, "expired-an-hour-ago", timedelta(hours=2))
    session(token, "expired-almost-a-day-ago", DAY + timedelta(minutes=59))
    session(token, "expired-over-a-day-ago", DAY + timedelta(hours=1, minutes=1))
    session(token, "ended-days-ago", 3 * DAY, ended=True)

    assert http_sessions.purge(DAY) == 2
    assert remaining() == {"open", "deleted-a-minute-ago", "expired-an-hour-ago", "expired-almost-a-day-ago"}
    assert http_sessions.count_open() == 1
    assert http_sessions.purge(DAY) == 0


def test_the_purge_goes_on_batch_after_batch(token, monkeypatch):
    monkeypatch.setattr(http_sessions, "PURGE_BATCH", 2)
    for n in range(5):
        session(token, f"old-{n}", 2 * DAY, ended=n % 2 == 0)
    session(token, "open", timedelta(0))

    assert http_sessions.purge(DAY) == 5
    assert remaining() == {"open"}


def test_the_command_prints_what_it_deleted(token, capsys):
    session(token, "ended-days-ago", 3 * DAY, ended=True)
    session(token, "expired-days-ago", 2 * DAY)
    session(token, "unused-for-four-hours", timedelta(hours=4))

    call_command("purge_mcp_sessions")  # a day's grace by default
    assert capsys.readouterr().out == "Deleted 2 MCP sessions ended or expired more than 1d ago.\n"
    call_command("purge_mcp_sessions", "--grace", "2h")  # expired 3 hours ago
    assert "Deleted 1 MCP sessions" in capsys.readouterr().out
    assert remaining() == set()
    with pytest.raises(CommandError):
        call_command("purge_mcp_sessions", "--grace", "soon")


@pytest.mark.django_db(transaction=True)
def test_a_purged_session_gets_404_like_an_unknown_one_and_open_ones_go_on(make_token, settings):
    settings.MCP_AUTH_CACHE_SECONDS = 0  # answered from the database, as a day later anywhere
    token = make_token()
    auth = {"authorization": f"Bearer {token}"}

    async def open_three():
        kept, deleted, abandoned = [session_of(await mcp_post(token, LEGACY_INIT)) for _ in range(3)]
        ended = await request("DELETE", "/mcp", mcp_session_id=deleted, **auth)
        assert ended["status"] == 204
        return kept, deleted, abandoned

    kept, deleted, abandoned = async_to_sync(open_three)()
    two_days_ago = timezone.now() - 2 * DAY
    McpSession.objects.filter(session_id__in=[deleted, abandoned]).update(last_active=two_days_ago)
    assert http_sessions.purge(DAY) == 2

    async def ping_each():
        return [await mcp_post(token, PING, s) for s in (deleted, abandoned, "no-such-session", kept)]

    *purged, unknown, open_one = async_to_sync(ping_each)()
    assert unknown["status"] == 404
    for answer in purged:
        assert (answer["status"], answer["body"]) == (unknown["status"], unknown["body"])
    assert open_one["status"] == 200


def plan_of(run: Callable[[], object]) -> str:
    """The database's plan for the first query `run` makes."""
    with CaptureQueriesContext(connection) as queries:
        run()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":  # a table this small is read whole otherwise
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("EXPLAIN " + queries[0]["sql"])
        else:
            cursor.execute("EXPLAIN QUERY PLAN " + queries[0]["sql"])
        return "\n".join(" ".join(map(str, row)) for row in cursor.fetchall())


def test_the_open_count_and_the_purge_search_the_index_instead_of_scanning(token):
    session(token, "open", timedelta(minutes=5))
    session(token, "old", 3 * DAY, ended=True)

    for plan in (plan_of(http_sessions.count_open), plan_of(lambda: http_sessions.purge(DAY))):
        assert "mcp_session_activity" in plan, plan
