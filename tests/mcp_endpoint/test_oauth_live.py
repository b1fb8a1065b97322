"""A hosted connector's whole journey against a live hub, with the official MCP SDK's OAuth
client: discovery from the 401, its client metadata document (served over HTTPS on loopback,
as its own site would), PKCE, the owner's consent over HTTP, the token, tool calls, a refresh,
and the owner revoking it on the Access page. Also dynamic registration with narrowed scopes,
and a token for another resource."""

import json
import subprocess
import time
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from asgiref.sync import async_to_sync

from audit.models import Event
from devices.home.models import Light
from mcp_endpoint.auth import tokens
from mcp_endpoint.auth.oauth import grants
from mcp_endpoint.models import OAuthClient, RefreshToken
from tests.conftest import free_port
from tests.hub_support import create_account, log_in_over_http, running_hub
from tests.mcp_endpoint.test_mcp_conformance import NEXT, NODE, SUITE_DIR, _suite_installed
from tests.mcp_endpoint.test_mcp_websocket import ws_url
from tests.mcp_helpers import call
from tests.oauth_support import OWNER, PASSWORD, make_certificate, served_documents

pytestmark = pytest.mark.live
REDIRECT = "http://127.0.0.1:9/callback"  # never reached: the test reads the redirect itself
ACCEPT = "application/json, text/event-stream"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


@pytest.fixture
def owner(live_env, django_user_model):
    return create_account(OWNER, PASSWORD)


class Owner:
    """The homeowner's browser: logs in to the dashboard, then answers consent pages (a
    blocking client, so that it outlives the event loops of `async_to_sync`; the hub is
    another process)."""

    def __init__(self, base: str, keep: list[str]) -> None:
        self.base, self.keep = base, keep
        self.http = httpx.Client(base_url=base, timeout=10)
        self.answer: dict[str, str] = {}
        self.pages: list[str] = []

    def log_in(self) -> None:
        log_in_over_http(self.http, OWNER, PASSWORD)

    def allow(self, authorization_url: str) -> str:
        """The owner sees the consent page and allows the scopes kept: where they are sent."""
        page = self.http.get(authorization_url)
        assert page.status_code == 200, page.text[:300]
        self.pages.append(page.text)
        form = {
            "csrfmiddlewaretoken": self.http.cookies["csrftoken"],
            "decision": "allow",
            "scope": self.keep,
        }
        answer = self.http.post(authorization_url, data=form)
        assert answer.status_code == 302
        return answer.headers["location"]

    async def consent(self, authorization_url: str) -> None:
        """The SDK's redirect handler."""
        location = self.allow(authorization_url)
        assert location.startswith(REDIRECT)
        self.answer = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}

    async def callback(self):
        from mcp.shared.auth import AuthorizationCodeResult

        return AuthorizationCodeResult(
            code=self.answer["code"], state=self.answer.get("state"), iss=self.answer.get("iss")
        )


class Storage:
    def __init__(self) -> None:
        self.tokens = None
        self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens) -> None:
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info) -> None:
        self.client_info = client_info


def connector(base: str, owner: Owner, storage: Storage, metadata_url: str | None = None):
    """An MCP SDK client of `base`'s /mcp that authorizes through OAuth."""
    import httpx2
    from mcp import Client
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import OAuthClientMetadata

    provider = OAuthClientProvider(
        server_url=base + "/mcp",
        client_metadata=OAuthClientMetadata(
            client_name="Test connector",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
        ),
        storage=storage,
        redirect_handler=owner.consent,
        callback_handler=owner.callback,
        client_metadata_url=metadata_url,
    )
    http = httpx2.AsyncClient(auth=provider, timeout=10)
    return http, Client(streamable_http_client(base + "/mcp", http_client=http), mode="legacy")


def post(base: str, token: str, body: dict, session: str | None = None) -> httpx.Response:
    headers = {"authorization": f"Bearer {token}", "accept": ACCEPT, "content-type": "application/json"}
    if session:
        headers["mcp-session-id"] = session
    return httpx.post(base + "/mcp", content=json.dumps(body), headers=headers, timeout=10)


def call_tool(base: str, token: str, name: str, arguments: dict) -> httpx.Response:
    """A tool call over a fresh handshake-era session (its answer: the HTTP response)."""
    opened = post(base, token, INIT)
    if opened.status_code != 200:
        return opened
    return post(base, token, call(name, arguments), opened.headers["mcp-session-id"])


def test_connector_with_a_client_metadata_document(live_env, owner, tmp_path):
    certificate = make_certificate(tmp_path)
    with served_documents(certificate) as site:
        metadata_url = site.document("/oauth/client.json", [REDIRECT], name="Test connector")
        settings = {
            "MCP_OAUTH_ALLOW_LOOPBACK_CLIENTS": "1",
            "SSL_CERT_FILE": str(certificate[0]),
            "MCP_OAUTH_ACCESS_TOKEN_SECONDS": "3",
        }
        with running_hub(live_env, **settings) as hub:
            browser = Owner(hub.base, keep=["read", "control"])
            browser.log_in()
            storage = Storage()

            async def journey():
                http, client = connector(hub.base, browser, storage, metadata_url)
                async with http, client:
                    switched = await client.call_tool("set_light_state", {"name": "cocina", "on": True})
                    first = storage.tokens
                    time.sleep(3.5)  # the access token expires: the SDK refreshes it
                    states = await client.call_tool("get_all_states", {})
                    return switched, first, states

            switched, first, states = async_to_sync(journey)()
            assert switched.structured_content == {"ok": True}
            assert states.structured_content["lights"]["cocina"] is True
            assert storage.tokens.refresh_token != first.refresh_token  # rotated
            assert storage.tokens.scope == "read control"

            page = browser.pages[0]
            assert "Test connector" in page and "<code>127.0.0.1</code>" in page
            client = OAuthClient.objects.get()
            assert client.client_id == metadata_url and client.kind == "document"
            assert RefreshToken.objects.filter(used=True).count() == 1
            event = Event.objects.get(target="light:cocina")
            assert (event.actor, event.interface) == ("Test connector", "mcp-http")

            listed = browser.http.get("/access/")
            assert "Test connector" in listed.text and "ago" in listed.text  # last use shown
            form = {"csrfmiddlewaretoken": browser.http.cookies["csrftoken"]}
            revoked = browser.http.post(f"/connected-apps/{client.grants.get().pk}/revoke/", data=form)
            assert revoked.status_code == 302
            refused = call_tool(hub.base, storage.tokens.access_token, "get_all_states", {})
            assert (
                refused.status_code == 401 and 'error="invalid_token"' in refused.headers["www-authenticate"]
            )
            assert Event.objects.filter(action="oauth.revoke", actor=OWNER).exists()


def test_registered_connector_with_narrowed_scopes(live_env, owner):
    with running_hub(live_env) as hub:
        browser = Owner(hub.base, keep=["read"])
        browser.log_in()
        storage = Storage()

        async def journey():
            http, client = connector(hub.base, browser, storage)  # no document: registers
            async with http, client:
                return await client.call_tool("get_alarm_status", {})

        status = async_to_sync(journey)()
        assert status.is_error is False
        assert storage.client_info.client_id.startswith("hhc_")
        assert 'value="control"' in browser.pages[0]  # asked for everything; the owner kept read
        assert storage.tokens.scope == "read"
        arguments = {"name": "salon", "on": True}
        refused = call_tool(hub.base, storage.tokens.access_token, "set_light_state", arguments)
        assert refused.status_code == 403 and "insufficient_scope" in refused.headers["www-authenticate"]
        assert Light.objects.get(name="salon").on is False


def test_a_token_for_another_resource_is_refused(daphne_server, owner):
    client = OAuthClient.objects.create(
        client_id="hhc_x", kind="registered", client_name="x", redirect_uris=[]
    )
    elsewhere = grants.create(client, owner, ["read"], "http://elsewhere.example/mcp")
    token = grants.new_access_token(elsewhere)
    grants.issue(elsewhere, token, grants.new_refresh_token(), 600)
    assert tokens.authenticate(token) is not None
    refused = call_tool(daphne_server, token, "get_alarm_status", {})
    assert refused.status_code == 401
    assert "another resource" in refused.headers["www-authenticate"]
    here = grants.create(client, owner, ["read"], daphne_server + "/mcp")
    token = grants.new_access_token(here)
    grants.issue(here, token, grants.new_refresh_token(), 600)
    assert call_tool(daphne_server, token, "get_alarm_status", {}).status_code == 200
    # Nor is /mcp's token good at the other doors: the WebSocket and the REST API refuse it.
    assert websocket_refusal(ws_url(daphne_server), token) == 403
    rest = httpx.get(daphne_server + "/api/alarm", headers={"Authorization": f"Bearer {token}"})
    assert rest.status_code == 401


def websocket_refusal(url: str, token: str) -> int:
    """The HTTP status with which the WebSocket handshake is refused (0: it was accepted)."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    async def attempt() -> int:
        try:
            async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}):
                return 0
        except InvalidStatus as refused:
            return refused.response.status_code

    return async_to_sync(attempt)()


@pytest.mark.conformance
def test_the_conformance_suites_authorization_server_scenarios(daphne_server, owner):
    """The official suite's authorization-server scenarios (metadata, the authorization code
    grant with PKCE and a resource), the owner answering the consent page it points to."""
    _suite_installed(NEXT)
    port = free_port()
    callback = f"http://127.0.0.1:{port}/callback"
    registration = {"client_name": "conformance", "redirect_uris": [callback]}
    client_id = httpx.post(daphne_server + "/oauth/register", json=registration).json()["client_id"]
    command = [str(NODE), str(NEXT.cli), "authorization", "--url", daphne_server, "--client-id", client_id]
    command += ["--port", str(port), "--resource", daphne_server + "/mcp"]
    suite = subprocess.Popen(
        command, cwd=SUITE_DIR, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        output = []
        while not (line := suite.stdout.readline()).startswith(daphne_server + "/oauth/authorize"):
            assert line, "the suite ended without an authorization URL: " + "".join(output)
            output.append(line)
        browser = Owner(daphne_server, keep=["read"])
        browser.log_in()
        location = browser.allow(line.strip())
        assert location.startswith(callback + "?code=")
        for _ in range(50):  # its callback server may still be starting
            try:
                httpx.get(location, timeout=5)
                break
            except httpx.ConnectError:
                time.sleep(0.1)
        rest, _ = suite.communicate(timeout=60)
    finally:
        suite.kill()
    assert suite.returncode == 0, rest
    assert "Total: 3 passed, 0 failed" in rest
