"""The hub's OAuth server through Django's test client: metadata, the authorization request's
checks (PKCE S256, exact redirect URI, resource), consent and its Deny, the token endpoint's
code and refresh grants (rotation, reuse), revocation, dynamic registration, and the guarded
fetch of client metadata documents."""

import ipaddress
import json
from datetime import timedelta
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.utils import timezone

from audit.models import Event
from mcp_endpoint.auth import tokens
from mcp_endpoint.auth.oauth import client_documents
from mcp_endpoint.auth.oauth.client_documents import ClientDocumentError
from mcp_endpoint.models import AccessToken, OAuthClient, OAuthGrant, RefreshToken
from tests.conftest import free_port
from tests.hub_support import create_account
from tests.oauth_support import make_certificate, pkce, served_documents

HUB = "http://testserver"
RESOURCE = HUB + "/mcp"
REDIRECT = "http://127.0.0.1:9/callback"
ALLOW_READ = {"decision": "allow", "scope": ["read"]}


@pytest.fixture(autouse=True)
def _registrations_unlimited(settings):
    """These tests register often, from one address; the limit has its own test."""
    settings.MCP_OAUTH_REGISTRATIONS_PER_HOUR = 0


@pytest.fixture
def owner(django_user_model):
    return create_account("owner", "pw-for-tests")


@pytest.fixture
def browser(client, owner):
    client.force_login(owner)
    return client


def register(client, REMOTE_ADDR="127.0.0.1", **metadata):
    body = {"client_name": "Registered app", "redirect_uris": [REDIRECT], **metadata}
    return client.post("/oauth/register", body, content_type="application/json", REMOTE_ADDR=REMOTE_ADDR)


def authorize_url(client_id, challenge, **params):
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "state": "st-123",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "scope": "read control",
        "resource": RESOURCE,
        **params,
    }
    return "/oauth/authorize?" + urlencode({k: v for k, v in query.items() if v is not None})


def redirected(response):
    assert response.status_code == 302, response.content[:500]
    location = response["Location"]
    return location, {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def token_request(client, **data):
    return client.post("/oauth/token", urlencode(data), content_type="application/x-www-form-urlencoded")


def connect(browser, scopes=("read", "control")):
    """Register, consent to `scopes`, exchange the code: (client_id, token answer)."""
    client_id = register(browser).json()["client_id"]
    verifier, challenge = pkce()
    url = authorize_url(client_id, challenge)
    _, params = redirected(browser.post(url, {"decision": "allow", "scope": list(scopes)}))
    assert params["iss"] == HUB  # RFC 9207: the answer names who issued the code
    answer = token_request(
        browser,
        grant_type="authorization_code",
        code=params["code"],
        redirect_uri=REDIRECT,
        client_id=client_id,
        code_verifier=verifier,
        resource=RESOURCE,
    )
    assert answer.status_code == 200, answer.content
    return client_id, answer.json()


def test_metadata_names_the_hub_as_its_own_authorization_server(client, db):
    server = client.get("/.well-known/oauth-authorization-server").json()
    assert server["issuer"] == HUB
    assert server["authorization_endpoint"] == HUB + "/oauth/authorize"
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert server["client_id_metadata_document_supported"] is True
    assert server["authorization_response_iss_parameter_supported"] is True  # RFC 9207
    assert "none" in server["token_endpoint_auth_methods_supported"]
    assert server["scopes_supported"][:2] == ["read", "control"] and "fel" in server["scopes_supported"]
    assert {"registration_endpoint", "revocation_endpoint", "token_endpoint"} <= set(server)
    resource = client.get("/.well-known/oauth-protected-resource/mcp").json()
    assert resource["authorization_servers"] == [HUB] and resource["resource"] == RESOURCE


def test_consent_page_names_the_client_and_its_scopes_and_deny_sends_access_denied(browser):
    client_id = register(browser).json()["client_id"]
    url = authorize_url(client_id, pkce()[1])
    page = browser.get(url)
    assert page.status_code == 200
    text = page.content.decode()
    assert "Registered app" in text and "127.0.0.1" in text
    assert 'name="scope" value="read"' in text and 'name="scope" value="control"' in text
    assert 'value="fel"' not in text  # not asked for
    location, params = redirected(browser.post(url, {"decision": "deny", "scope": ["read"]}))
    assert location.startswith(REDIRECT)
    assert params["error"] == "access_denied" and params["state"] == "st-123"
    assert params["iss"] == HUB
    assert not OAuthGrant.objects.exists()


def test_undeclared_scopes_are_ignored(browser):
    client_id = register(browser).json()["client_id"]
    url = authorize_url(client_id, pkce()[1], scope="offline_access read")
    # The consent form, without the footer's language switcher (which comes back to this URL).
    text = browser.get(url).content.decode().split("<footer")[0]
    assert 'value="read"' in text and 'value="control"' not in text and "offline_access" not in text
    only_unknown = browser.get(authorize_url(client_id, pkce()[1], scope="openid")).content.decode()
    assert 'value="read"' in only_unknown and 'value="control"' in only_unknown  # all declared
    _, params = redirected(browser.post(url, {"decision": "allow", "scope": ["read", "offline_access"]}))
    assert OAuthGrant.objects.get().scopes == ["read"] and "code" in params


def test_consent_needs_the_owner_logged_in_and_a_csrf_token(client, owner):
    client_id = register(client).json()["client_id"]
    url = authorize_url(client_id, pkce()[1])
    response = client.get(url)
    assert response.status_code == 302 and response["Location"].startswith("/login/?next=")
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(owner)
    assert strict.post(url, {"decision": "allow", "scope": ["read"]}).status_code == 403


def test_plain_pkce_and_a_missing_challenge_are_refused(browser):
    client_id = register(browser).json()["client_id"]
    verifier = "v" * 50
    _, params = redirected(browser.get(authorize_url(client_id, verifier, code_challenge_method="plain")))
    assert params["error"] == "invalid_request" and params["state"] == "st-123"
    assert params["iss"] == HUB
    _, params = redirected(browser.get(authorize_url(client_id, None, code_challenge_method=None)))
    assert params["error"] == "invalid_request"


def test_bad_client_or_redirect_uri_is_shown_never_redirected(browser):
    client_id = register(browser).json()["client_id"]
    wrong = browser.get(authorize_url(client_id, pkce()[1], redirect_uri="http://127.0.0.1:9/other"))
    assert wrong.status_code == 400 and b"cannot be used" in wrong.content
    unknown = browser.get(authorize_url("hhc_nobody", pkce()[1]))
    assert unknown.status_code == 400


def test_a_resource_other_than_the_hubs_mcp_is_invalid_target(browser):
    client_id = register(browser).json()["client_id"]
    url = authorize_url(client_id, pkce()[1], resource="https://elsewhere.example/mcp")
    _, params = redirected(browser.get(url))
    assert params["error"] == "invalid_target"

    verifier, challenge = pkce()
    _, params = redirected(browser.post(authorize_url(client_id, challenge), ALLOW_READ))
    answer = token_request(
        browser,
        grant_type="authorization_code",
        code=params["code"],
        redirect_uri=REDIRECT,
        client_id=client_id,
        code_verifier=verifier,
        resource="https://elsewhere.example/mcp",
    )
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_target"


def test_code_exchange_issues_a_hashed_bound_short_lived_token_for_the_kept_scopes(browser, owner, settings):
    settings.MCP_OAUTH_ACCESS_TOKEN_SECONDS = 600
    client_id, answer = connect(browser, scopes=["read"])
    assert answer["token_type"] == "Bearer" and answer["expires_in"] == 600 and answer["scope"] == "read"
    row = tokens.authenticate(answer["access_token"])
    assert row is not None and row.scopes == ["read"] and row.owner == owner
    assert row.resource == RESOURCE and row.grant.client.client_id == client_id
    assert answer["access_token"] not in row.secret_hash
    assert not RefreshToken.objects.filter(token_hash=answer["refresh_token"]).exists()  # hashed
    event = Event.objects.get(action="oauth.grant")
    assert (event.actor, event.interface, event.after["scopes"]) == ("owner", "dashboard", ["read"])


def test_a_code_works_once_and_only_with_its_verifier(browser):
    client_id = register(browser).json()["client_id"]
    verifier, challenge = pkce()
    _, params = redirected(browser.post(authorize_url(client_id, challenge), ALLOW_READ))
    exchange = {
        "grant_type": "authorization_code",
        "code": params["code"],
        "redirect_uri": REDIRECT,
        "client_id": client_id,
    }
    assert token_request(browser, **exchange, code_verifier="x" * 50).json()["error"] == "invalid_grant"
    assert token_request(browser, **exchange, code_verifier=verifier).json()["error"] == "invalid_grant"


def test_a_code_presented_again_revokes_what_it_was_exchanged_for(browser):
    client_id = register(browser).json()["client_id"]
    verifier, challenge = pkce()
    _, params = redirected(browser.post(authorize_url(client_id, challenge), ALLOW_READ))
    exchange = {
        "grant_type": "authorization_code",
        "code": params["code"],
        "redirect_uri": REDIRECT,
        "client_id": client_id,
        "code_verifier": verifier,
    }
    issued = token_request(browser, **exchange).json()
    assert tokens.authenticate(issued["access_token"]) is not None
    assert token_request(browser, **exchange).json()["error"] == "invalid_grant"
    assert tokens.authenticate(issued["access_token"]) is None


def test_refresh_rotates_and_a_reused_refresh_token_revokes_the_family(browser):
    client_id, first = connect(browser)
    refresh = {"grant_type": "refresh_token", "client_id": client_id, "resource": RESOURCE}
    second = token_request(browser, **refresh, refresh_token=first["refresh_token"])
    assert second.status_code == 200
    second = second.json()
    assert second["refresh_token"] != first["refresh_token"]
    assert tokens.authenticate(second["access_token"]) is not None
    assert tokens.authenticate(first["access_token"]) is None  # the row's secret changed
    assert AccessToken.objects.filter(grant__isnull=False).count() == 1  # one row per grant

    replay = token_request(browser, **refresh, refresh_token=first["refresh_token"])
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert tokens.authenticate(second["access_token"]) is None  # the family is revoked
    after = token_request(browser, **refresh, refresh_token=second["refresh_token"])
    assert after.json()["error"] == "invalid_grant"


def test_revocation_endpoint_ends_the_grant(browser):
    client_id, answer = connect(browser)
    response = browser.post(
        "/oauth/revoke",
        urlencode({"token": answer["refresh_token"], "client_id": client_id}),
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 200
    assert tokens.authenticate(answer["access_token"]) is None
    assert OAuthGrant.objects.get().revoked_at is not None


def test_connected_apps_lists_and_revokes(browser):
    _, answer = connect(browser, scopes=["read"])
    page = browser.get("/access/").content.decode()
    assert "Registered app" in page and "<code>read</code>" in page and "never" in page
    assert 'href="/access/"' in browser.get("/").content.decode()  # in the nav
    grant = OAuthGrant.objects.get()
    response = browser.post(f"/connected-apps/{grant.pk}/revoke/")
    assert response.status_code == 302
    assert tokens.authenticate(answer["access_token"]) is None
    assert "No app is connected" in browser.get("/access/").content.decode()
    assert Event.objects.filter(action="oauth.revoke", actor="owner").exists()


def test_oauth_tokens_are_for_mcp_only_not_the_rest_api(browser):
    _, answer = connect(browser, scopes=["read"])
    from django.test import Client

    rest = Client().get("/api/lights", HTTP_AUTHORIZATION=f"Bearer {answer['access_token']}")
    assert rest.status_code == 401


def test_static_tokens_are_untouched(db):
    row, raw = tokens.create_token("agent", ["read"], actor="test", interface="system")
    assert tokens.authenticate(raw) == row and row.resource == "" and row.grant is None


def test_registration_checks_its_metadata(client, db):
    plain = register(client, redirect_uris=["http://evil.example/cb"])
    assert plain.json()["error"] == "invalid_redirect_uri"
    assert register(client, redirect_uris=["https://app.example/cb#x"]).status_code == 400
    secret = register(client, token_endpoint_auth_method="client_secret_basic")
    assert secret.json()["error"] == "invalid_client_metadata"
    made = register(client, redirect_uris=["https://app.example/cb", "http://localhost:3000/cb"])
    assert made.status_code == 201
    assert made.json()["token_endpoint_auth_method"] == "none" and made.json()["client_id"].startswith("hhc_")
    bad = client.post("/oauth/register", "not json", content_type="application/json")
    assert bad.json()["error"] == "invalid_client_metadata"
    OAuthClient.objects.filter(client_id=made.json()["client_id"]).update(
        created_at=timezone.now() - timedelta(days=2)
    )
    register(client)  # a registration nobody authorized for a day is deleted
    assert not OAuthClient.objects.filter(client_id=made.json()["client_id"]).exists()


def test_registrations_are_limited_per_address(client, db, settings):
    settings.MCP_OAUTH_REGISTRATIONS_PER_HOUR = 2
    busy, other = {"REMOTE_ADDR": "192.0.2.10"}, {"REMOTE_ADDR": "192.0.2.11"}
    assert [register(client, **busy).status_code for _ in range(2)] == [201, 201]
    refused = register(client, **busy)
    assert refused.status_code == 429 and refused.json()["error"] == "temporarily_unavailable"
    assert 0 < int(refused["Retry-After"]) <= 3600
    assert register(client, **other).status_code == 201
    assert OAuthClient.objects.count() == 3


# --- the guarded fetch of client metadata documents ---------------------------------------------


@pytest.fixture
def certificate(tmp_path, monkeypatch):
    cert = make_certificate(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert[0]))
    return cert


def test_documents_must_be_https(settings):
    settings.MCP_OAUTH_ALLOW_LOOPBACK_CLIENTS = False
    with pytest.raises(ClientDocumentError, match="must be an https URL"):
        client_documents.fetch("http://app.example/client.json")
    with pytest.raises(ClientDocumentError, match="must have a path"):
        client_documents.fetch("https://app.example/")


def test_documents_on_private_or_loopback_addresses_are_refused(settings, certificate):
    settings.MCP_OAUTH_ALLOW_LOOPBACK_CLIENTS = False
    for url in ("https://10.1.2.3/c.json", "https://169.254.169.254/c.json", "https://[::1]/c.json"):
        with pytest.raises(ClientDocumentError, match="could not be fetched"):
            client_documents.fetch(url)
    with served_documents(certificate) as site:
        url = site.document("/client.json", [REDIRECT])
        with pytest.raises(ClientDocumentError, match="could not be fetched"):
            client_documents.fetch(url)
        settings.MCP_OAUTH_ALLOW_LOOPBACK_CLIENTS = True
        assert client_documents.fetch(url)["client_name"] == "Test connector"


# Each an IPv6 way to reach a private, loopback or link-local IPv4 address (or a non-public
# IPv6 one) that the guard once let through.
NON_PUBLIC_IPV6 = [
    "64:ff9b::a00:1",  # NAT64 (RFC 6052) of 10.0.0.1
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254 (cloud metadata)
    "64:ff9b:1::808:808",  # local-use NAT64 (RFC 8215), whatever it carries
    "2002:a00:1::1",  # 6to4 of 10.0.0.1
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "::a00:1",  # IPv4-compatible 10.0.0.1
    "::ffff:0:a00:1",  # SIIT / IPv4-translated 10.0.0.1
    "::ffff:10.0.0.1",  # IPv4-mapped
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo
    "fec0::1",  # site-local
    "fc00::1",  # unique local
    "fe80::1",  # link-local
    "ff02::1",  # multicast
    "2001:db8::1",  # documentation
]


@pytest.mark.parametrize("address", NON_PUBLIC_IPV6)
def test_ipv6_forms_of_non_public_addresses_are_refused(settings, address):
    settings.MCP_OAUTH_ALLOW_LOOPBACK_CLIENTS = False
    assert not client_documents.is_public(ipaddress.ip_address(address))
    with pytest.raises(ClientDocumentError) as refused:
        client_documents.fetch(f"https://[{address}]/client.json")
    assert str(refused.value) == client_documents.NOT_FETCHED


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "2606:4700::1111", "64:ff9b::808:808", "2002:808:808::1", "::ffff:8.8.8.8"]
)
def test_public_addresses_and_their_ipv6_forms_pass(address):
    assert client_documents.is_public(ipaddress.ip_address(address))


def test_a_refusal_says_nothing_about_the_target(settings, certificate):
    """Unresolvable, private, or public but refusing the connection: one and the same answer
    (else the hub would tell a stranger which of its neighbours exist and listen)."""
    settings.MCP_OAUTH_ALLOW_LOOPBACK_CLIENTS = False
    answers = set()
    for url in ("https://nowhere.invalid/c.json", "https://192.168.1.1/c.json", "https://10.9.9.9:22/c.json"):
        with pytest.raises(ClientDocumentError) as refused:
            client_documents.fetch(url)
        answers.add(str(refused.value))
    settings.MCP_OAUTH_ALLOW_LOOPBACK_CLIENTS = True
    with pytest.raises(ClientDocumentError) as refused:  # loopback allowed, but nothing listens
        client_documents.fetch(f"https://127.0.0.1:{free_port()}/c.json")
    answers.add(str(refused.value))
    assert answers == {client_documents.NOT_FETCHED}


def test_oversize_slow_or_foreign_documents_are_refused(settings, certificate):
    settings.MCP_OAUTH_ALLOW_LOOPBACK_CLIENTS = True
    with served_documents(certificate) as site:
        big = site.base + "/big.json"
        site.routes["/big.json"] = (200, b'{"client_id": "' + b"x" * 70_000 + b'"}', 0.0)
        with pytest.raises(ClientDocumentError, match="larger than 65536 bytes"):
            client_documents.fetch(big)
        other = site.base + "/other.json"
        foreign = {"client_id": "https://else.example/c", "redirect_uris": [REDIRECT]}
        site.routes["/other.json"] = (200, json.dumps(foreign).encode(), 0.0)
        with pytest.raises(ClientDocumentError, match="not its own URL"):
            client_documents.fetch(other)
        slow = site.base + "/slow.json"
        site.routes["/slow.json"] = (200, b"{}", 1.0)
        settings.MCP_OAUTH_DOCUMENT_SECONDS = 0.3
        with pytest.raises(ClientDocumentError, match="could not be fetched"):
            client_documents.fetch(slow)
        with pytest.raises(ClientDocumentError, match="HTTP 404"):
            client_documents.fetch(site.base + "/missing.json")


def test_documents_over_an_untrusted_certificate_are_refused(settings, tmp_path):
    settings.MCP_OAUTH_ALLOW_LOOPBACK_CLIENTS = True
    with served_documents(make_certificate(tmp_path)) as site:  # SSL_CERT_FILE not set: not trusted
        url = site.document("/client.json", [REDIRECT])
        with pytest.raises(ClientDocumentError, match="could not be fetched"):
            client_documents.fetch(url)


def test_consent_names_a_document_clients_name_and_host(browser, settings, certificate):
    settings.MCP_OAUTH_ALLOW_LOOPBACK_CLIENTS = True
    with served_documents(certificate) as site:
        url = site.document("/connector.json", [REDIRECT], name="Claude (test)")
        page = browser.get(authorize_url(url, pkce()[1]))
        assert page.status_code == 200
        assert b"Claude (test)" in page.content and b"<code>127.0.0.1</code>" in page.content
        site.routes.clear()  # kept: no second fetch within MCP_OAUTH_CLIENT_CACHE_SECONDS
        assert browser.get(authorize_url(url, pkce()[1])).status_code == 200
    refused = browser.get(authorize_url("https://10.0.0.7/connector.json", pkce()[1]))
    assert refused.status_code == 400 and b"could not be fetched" in refused.content


def test_the_admin_lists_clients_and_their_grants_read_only(browser, admin_client):
    client_id, _ = connect(browser, scopes=("read",))
    register(browser, client_name="Never authorized")
    listing = admin_client.get("/admin/mcp_endpoint/oauthclient/")
    assert listing.status_code == 200
    text = listing.content.decode()
    assert "Registered app" in text and "Never authorized" in text and "127.0.0.1" in text
    client = OAuthClient.objects.get(client_id=client_id)
    page = admin_client.get(f"/admin/mcp_endpoint/oauthclient/{client.pk}/change/")
    assert page.status_code == 200 and 'id="grants-group"' in page.content.decode()  # its grant, inline
    assert "[&quot;read&quot;]" in page.content.decode() or '["read"]' in page.content.decode()
    assert admin_client.get("/admin/mcp_endpoint/oauthclient/add/").status_code == 403
    admin_client.post(f"/admin/mcp_endpoint/oauthclient/{client.pk}/delete/", {"post": "yes"})
    assert OAuthClient.objects.filter(pk=client.pk).exists()  # revoked on Connected apps, not deleted here


def test_when_documents_are_busy_the_token_endpoint_says_so_and_consent_never_redirects(browser, settings):
    settings.MCP_OAUTH_ALLOW_LOOPBACK_CLIENTS = True
    settings.MCP_OAUTH_DOCUMENT_FETCHES = 0  # every read finds the bound reached
    url = "http://127.0.0.1:9/client.json"
    busy = token_request(browser, grant_type="refresh_token", client_id=url, refresh_token="hhr_x")
    assert busy.status_code == 503 and busy.json()["error"] == "temporarily_unavailable"
    page = browser.get(authorize_url(url, pkce()[1], redirect_uri="https://evil.example/cb"))
    assert page.status_code == 400 and b"too many client metadata documents" in page.content
