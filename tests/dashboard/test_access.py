"""The Access page (issue 28): every token a person made (create_mcp_token, the admin's and
the demo's service, this page) listed with its scopes and last use beside the OAuth apps; an
owner creates a token whose secret is shown once and never again, and revokes tokens, which
stop opening the hub at once. Owners only; bad input names its field and saves nothing."""

import io
import logging

import pytest
from django.core.management import call_command

from audit.models import Event
from mcp_endpoint.auth import tokens
from mcp_endpoint.models import AccessToken, OAuthClient, OAuthGrant
from tests.hub_support import create_account

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner_client(client):
    client.force_login(create_account("maria", "a-long-password-1"))
    return client


def _create(client, **fields):
    return client.post("/access/tokens/", {"name": "Laptop script", "scopes": ["read"], **fields})


def _secret_in(html: str) -> str:
    marker = 'id="token-secret" class="secret" value="'
    start = html.index(marker) + len(marker)
    return html[start : html.index('"', start)]


def test_tokens_made_anywhere_are_listed_with_scopes_and_last_use(owner_client):
    out = io.StringIO()
    call_command(
        "create_mcp_token", "Voice assistant", "--scopes", "read,control", stdout=out, stderr=io.StringIO()
    )
    tokens.authenticate(out.getvalue().strip())  # used once
    tokens.create_token("Admin-made", ["fel"], actor="admin", interface="admin")
    client_app = OAuthClient.objects.create(
        client_id="https://app.example/c.json", kind="document", client_name="Claude", redirect_uris=[]
    )
    grant = OAuthGrant.objects.create(
        client=client_app, owner=create_account("x", "pw-1-long-enough"), scopes=["read"]
    )
    AccessToken.objects.create(
        name="Claude", key_id="abc", secret_hash="0" * 64, grant=grant, scopes=["read"]
    )
    revoked, _ = tokens.create_token("Old", ["read"], actor="test", interface="system")
    tokens.revoke_all(AccessToken.objects.filter(pk=revoked.pk), actor="test", interface="system")

    html = owner_client.get("/access/").content.decode()
    tokens_table = html[html.index('id="tokens"') : html.index("</table>")]
    assert "Voice assistant" in tokens_table and "<code>read</code>, <code>control</code>" in tokens_table
    assert "Admin-made" in tokens_table and "<code>fel</code>" in tokens_table
    assert "ago" in tokens_table and "never" in tokens_table  # the used one, the unused one
    assert "Old" not in tokens_table  # revoked: gone
    assert "Claude" not in tokens_table  # an OAuth app's token is listed as its app
    assert "Claude" in html[html.index('id="apps"') :]
    assert 'href="/access/"' in html  # in the navigation


def test_the_secret_is_shown_once_and_never_again(owner_client, caplog):
    caplog.set_level(logging.DEBUG)
    response = _create(owner_client, scopes=["read", "control"], expires_days="30")
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    secret = _secret_in(response.content.decode())
    token = tokens.authenticate(secret)
    assert token is not None and token.name == "Laptop script" and token.scopes == ["read", "control"]
    assert token.owner.username == "maria" and token.expires_at is not None
    assert secret.split("_")[-1] not in token.secret_hash  # stored hashed
    later = owner_client.get("/access/").content.decode()
    assert "Laptop script" in later and secret not in later and "token-secret" not in later
    assert secret not in caplog.text
    event = Event.objects.get(action="token.create")
    assert (event.actor, event.interface) == ("maria", "dashboard")
    assert secret not in str(event.after) and event.after["scopes"] == ["read", "control"]


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"name": ""}, "Give the token a name."),
        ({"scopes": []}, "Choose at least one scope."),
        ({"scopes": ["root"]}, "Select a valid choice. root is not one of the available choices."),
        ({"expires_days": "7"}, "Select a valid choice. 7 is not one of the available choices."),
    ],
)
def test_bad_input_names_the_field_and_saves_nothing(owner_client, fields, error):
    response = _create(owner_client, **fields)
    assert response.status_code == 400
    assert error in response.content.decode()
    assert "token-secret" not in response.content.decode()
    assert not AccessToken.objects.exists() and not Event.objects.filter(action="token.create").exists()


def test_revoking_a_token_ends_its_access_at_once(owner_client):
    token, secret = tokens.create_token("Script", ["read"], actor="test", interface="system")
    assert tokens.authenticate(secret) is not None  # remembered by this process
    response = owner_client.post(f"/access/tokens/{token.pk}/revoke/", follow=True)
    assert "Token &#x27;Script&#x27; is revoked" in response.content.decode()
    assert tokens.authenticate(secret) is None
    event = Event.objects.get(action="token.revoke")
    assert (event.actor, event.interface, event.target) == ("maria", "dashboard", f"token:{token.key_id}")
    again = owner_client.post(f"/access/tokens/{token.pk}/revoke/", follow=True)
    assert "already revoked or does not exist" in again.content.decode()
    assert Event.objects.filter(action="token.revoke").count() == 1


def test_an_apps_token_is_revoked_with_its_app_not_here(owner_client):
    client_app = OAuthClient.objects.create(
        client_id="https://app.example/c.json", kind="document", client_name="App", redirect_uris=[]
    )
    grant = OAuthGrant.objects.create(
        client=client_app, owner=create_account("x", "pw-1-long-enough"), scopes=["read"]
    )
    row = AccessToken.objects.create(
        name="App", key_id="abc", secret_hash="0" * 64, grant=grant, scopes=["read"]
    )
    owner_client.post(f"/access/tokens/{row.pk}/revoke/")
    row.refresh_from_db()
    assert row.revoked is False


@pytest.mark.parametrize("role", ["guest", "member"])
def test_only_owners_see_create_and_revoke(client, role):
    token, secret = tokens.create_token("Script", ["read"], actor="test", interface="system")
    client.force_login(create_account(f"a-{role}", "a-long-password-1", role))
    page = client.get("/access/")
    assert page.status_code == 403 and "This needs the owner role" in page.content.decode()
    assert _create(client).status_code == 403
    assert client.post(f"/access/tokens/{token.pk}/revoke/").status_code == 403
    assert AccessToken.objects.count() == 1 and tokens.authenticate(secret) is not None
    assert 'href="/access/"' not in client.get("/").content.decode()


def test_the_old_connected_apps_address_leads_to_access(owner_client):
    response = owner_client.get("/connected-apps/")
    assert (response.status_code, response["Location"]) == (301, "/access/")
