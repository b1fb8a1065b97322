"""An MCP client that runs in a web page, in a real headless Chromium against a live hub: at an
origin the hub allows (MCP_ALLOWED_ORIGINS) it discovers the authorization server, registers,
sends the owner to consent, exchanges the code and calls a tool over `/mcp`, reading every
answer and header it needs (CORS); at any other origin the browser keeps each answer from it."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
from collections.abc import Iterator
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from devices.home.models import Light
from tests.dashboard.test_dashboard_browser import browser, csp_violations, log_in, owner  # noqa: F401 (fixtures)
from tests.hub_support import running_hub
from tests.oauth_support import pkce

pytestmark = [pytest.mark.browser, pytest.mark.live]


@contextlib.contextmanager
def site(address: str, body: bytes = b"<!doctype html><title>web agent</title>") -> Iterator[str]:
    """A web page of its own (`body`, at every path) at a loopback `address`: its origin."""

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer((address, 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{address}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def sites() -> Iterator[tuple[str, str, str]]:
    """The web agent's site (allowed by the hub), where its OAuth redirect lands (a loopback
    redirect URI), and a stranger's site. Other hosts than the hub's (127.0.0.1 is one of its
    ALLOWED_HOSTS, whose pages it trusts on any port)."""
    with site("127.0.0.3") as agent, site("127.0.0.1") as callback, site("127.0.0.2") as stranger:
        yield agent, callback, stranger


@pytest.fixture
def hub(live_env, sites, owner):  # noqa: F811
    """A live hub that allows the web agent's origin (another port: every call is cross-origin)."""
    with running_hub(live_env, MCP_ALLOWED_ORIGINS=sites[0]) as process:
        yield process.base


# Runs in the page: discovery from /mcp's 401, then registration (a JSON POST: preflighted).
DISCOVER_AND_REGISTER = """async ({hub, redirect}) => {
  const unauthorized = await fetch(hub + "/mcp", {method: "POST",
    headers: {"content-type": "application/json", accept: "application/json, text/event-stream"},
    body: JSON.stringify({jsonrpc: "2.0", id: 1, method: "ping"})});
  const challenge = unauthorized.headers.get("www-authenticate");
  const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)[1];
  const resource = await (await fetch(metadataUrl)).json();
  const server = await (await fetch(resource.authorization_servers[0]
    + "/.well-known/oauth-authorization-server")).json();
  const registered = await fetch(server.registration_endpoint, {method: "POST",
    headers: {"content-type": "application/json"},
    body: JSON.stringify({client_name: "Web agent", redirect_uris: [redirect]})});
  return {status: unauthorized.status, resource: resource.resource, server,
          registered: registered.status, client: await registered.json()};
}"""

# Runs in the page: the code for a token (a form POST), then a session and a tool call.
TOKEN_AND_CALL = """async ({hub, server, client, code, verifier, redirect, resource}) => {
  const form = new URLSearchParams({grant_type: "authorization_code", code, redirect_uri: redirect,
    client_id: client.client_id, code_verifier: verifier, resource});
  const token = await (await fetch(server.token_endpoint, {method: "POST", body: form})).json();
  const headers = {authorization: "Bearer " + token.access_token,
    "content-type": "application/json", accept: "application/json, text/event-stream"};
  const rpc = (body, session) => fetch(hub + "/mcp", {method: "POST", body: JSON.stringify(body),
    headers: session ? {...headers, "mcp-session-id": session} : headers});
  const opened = await rpc({jsonrpc: "2.0", id: 1, method: "initialize", params: {
    protocolVersion: "2025-11-25", capabilities: {}, clientInfo: {name: "web agent", version: "1"}}});
  const session = opened.headers.get("mcp-session-id");
  await rpc({jsonrpc: "2.0", method: "notifications/initialized"}, session);
  const called = await rpc({jsonrpc: "2.0", id: 2, method: "tools/call",
    params: {name: "set_light_state", arguments: {name: "cocina", on: true}}}, session);
  return {scope: token.scope, session, answer: await called.text()};
}"""

# Runs in a stranger's page: what the browser lets it read of the hub.
STRANGER = """async (hub) => {
  const attempt = async (url, init) => {
    try { return (await fetch(url, init)).status; } catch (error) { return "blocked"; }
  };
  return {
    metadata: await attempt(hub + "/.well-known/oauth-authorization-server"),
    register: await attempt(hub + "/oauth/register", {method: "POST",
      headers: {"content-type": "application/json"},
      body: JSON.stringify({redirect_uris: ["http://127.0.0.1:9/cb"]})}),
    mcp: await attempt(hub + "/mcp", {method: "POST", headers: {"content-type": "application/json"},
      body: "{}"}),
  };
}"""


def answered(text: str) -> dict:
    """A POST's answer, as JSON or as the last event of its SSE stream."""
    events = [line[len("data:") :] for line in text.splitlines() if line.startswith("data:")]
    return json.loads(events[-1] if events else text)


def test_a_web_agent_at_an_allowed_origin_connects_with_oauth(hub, sites, browser):  # noqa: F811
    agent, callback, _ = sites
    redirect = callback + "/callback"
    context = browser.new_context()
    page = context.new_page()
    page.goto(agent + "/")
    found = page.evaluate(DISCOVER_AND_REGISTER, {"hub": hub, "redirect": redirect})
    assert found["status"] == 401 and found["resource"] == hub + "/mcp"
    assert found["registered"] == 201, found["client"]

    # The owner, logged in to the hub in this browser, consents in a tab of their own.
    tab = context.new_page()
    violations = csp_violations(tab)
    log_in(tab, hub)
    verifier, challenge = pkce()
    query = {
        "response_type": "code",
        "client_id": found["client"]["client_id"],
        "redirect_uri": redirect,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "scope": "read control",
        "resource": found["resource"],
        "state": "s1",
    }
    tab.goto(found["server"]["authorization_endpoint"] + "?" + urlencode(query))
    assert "Web agent" in tab.content()
    tab.click("button[value=allow]")
    tab.wait_for_url(redirect + "*")
    answer = {k: v[0] for k, v in parse_qs(urlsplit(tab.url).query).items()}
    assert answer["state"] == "s1" and answer["iss"] == hub
    assert violations == []  # the login and consent pages, and the consent's redirect to the app

    called = page.evaluate(
        TOKEN_AND_CALL,
        {**found, "hub": hub, "code": answer["code"], "verifier": verifier, "redirect": redirect},
    )
    assert called["scope"] == "read control" and called["session"]
    assert answered(called["answer"])["result"]["isError"] is False, called["answer"]
    assert Light.objects.get(name="cocina").on is True
    context.close()


def test_a_page_at_another_origin_reads_nothing(hub, sites, browser):  # noqa: F811
    *_, stranger = sites
    page = browser.new_page()
    page.goto(stranger + "/")
    assert page.evaluate(STRANGER, hub) == {"metadata": "blocked", "register": "blocked", "mcp": "blocked"}
    page.close()
