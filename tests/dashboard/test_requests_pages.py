"""The Requests page and a request's own page (issue #25): what the owner approves is all
that runs, so every argument is shown, however long; a request is decided once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from mcp_endpoint.controls import confirmation
from mcp_endpoint.models import PendingConfirmation

LONG = "A" * 3000 + "-the-end-of-the-argument"


def waiting(kind: str = "hub", **fields) -> PendingConfirmation:
    arguments = {"agent_id": "door", "tool": "self.door.open", "arguments": {"note": LONG}}
    return PendingConfirmation.objects.create(
        kind=kind,
        tool="door__self_door_open",
        summary="assistant (through mcp-http) asks to run door: self.door.open",
        arguments=arguments,
        arguments_hash=confirmation.arguments_hash(arguments),
        actor="assistant",
        interface="mcp-http",
        expires_at=timezone.now() + timedelta(seconds=60),
        **fields,
    )


@pytest.mark.django_db
def test_the_requests_page_and_the_request_page_show_a_long_argument_whole(staff_client):
    request = waiting()
    for url in ("/requests/", f"/requests/{request.pk}/"):
        page = staff_client.get(url).content.decode()
        assert LONG in page, url  # all of it, end included
        assert 'class="arguments"' in page
        assert f'action="/requests/{request.pk}/"' in page and 'value="approve"' in page


@pytest.mark.django_db
def test_a_request_page_decides_once_and_needs_a_login(staff_client):
    request = waiting()
    url = f"/requests/{request.pk}/"
    client = Client()  # nobody logged in
    assert client.get(url).status_code == 302  # to the login page
    assert client.post(url, {"decision": "approve"}).status_code == 302
    assert PendingConfirmation.objects.get().decision == "pending"
    answered = staff_client.post(url, {"decision": "approve", "back": "request"})
    assert answered.status_code == 302 and answered["Location"] == url
    row = PendingConfirmation.objects.get()
    assert (row.decision, row.decided_by) == ("approved", "boss")
    staff_client.post(url, {"decision": "deny"})
    assert PendingConfirmation.objects.get().decision == "approved"  # decided once
    page = staff_client.get(url).content.decode()
    assert "no longer waits" in page and 'value="approve"' not in page


@pytest.mark.django_db
def test_a_clients_own_question_is_not_the_owners_request(staff_client):
    """The nonce of a stateless client's question (a tool whose client's answer is enough) is
    neither listed, nor shown, nor decided on the hub."""
    row = waiting(kind="client")
    assert confirmation.waiting_count() == 0
    assert staff_client.get(f"/requests/{row.pk}/").status_code == 404
    assert not confirmation.decide(row.pk, approve=True, by="boss")
    assert LONG not in staff_client.get("/requests/").content.decode()
