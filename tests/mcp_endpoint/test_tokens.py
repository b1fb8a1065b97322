"""Access tokens: created by command and admin, stored hashed, checked strictly."""

from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from mcp_endpoint.auth.tokens import authenticate, bearer_token, create_token, revoke_all
from mcp_endpoint.models import AccessToken

pytestmark = pytest.mark.django_db


def test_create_mcp_token_prints_the_token_last_and_stores_only_a_hash(capsys):
    call_command("create_mcp_token", "claude", "--scopes", "read,control")
    token = capsys.readouterr().out.strip().splitlines()[-1]
    row = AccessToken.objects.get(name="claude")
    assert row.scopes == ["read", "control"]
    assert token.startswith("hh_") and token.split("_", 2)[2] not in row.secret_hash
    assert authenticate(token) == row


def test_unknown_scope_is_refused():
    with pytest.raises(CommandError, match="unknown scope"):
        call_command("create_mcp_token", "x", "--scopes", "read,root")


def test_wrong_revoked_and_expired_tokens_are_refused():
    row, token = create_token("a", ["read"], actor="test", interface="system")
    assert authenticate(token) == row
    assert authenticate(token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    assert authenticate("hh_" + row.key_id) is None
    assert authenticate("Bearer nonsense") is None
    assert authenticate("") is None
    revoke_all(AccessToken.objects.filter(pk=row.pk), actor="test", interface="system")
    assert authenticate(token) is None
    _, old = create_token(
        "b", ["read"], expires_at=timezone.now() - timedelta(seconds=1), actor="test", interface="system"
    )
    assert authenticate(old) is None


def test_bearer_header_parsing():
    assert bearer_token("Bearer abc") == "abc"
    assert bearer_token("bearer  abc ") == "abc"
    assert bearer_token("Basic abc") is None
    assert bearer_token(None) is None


def test_admin_creates_token_and_shows_it_once(staff_client):
    response = staff_client.post(
        "/admin/mcp_endpoint/accesstoken/add/", {"name": "from-admin", "scopes": ["read", "fel"]}, follow=True
    )
    assert response.status_code == 200
    row = AccessToken.objects.get(name="from-admin")
    shown = [str(m) for m in response.context["messages"]]
    token = next(word for m in shown for word in m.split() if word.startswith("hh_"))
    assert authenticate(token) == row and row.scopes == ["read", "fel"]
