"""The OAuth server's bounds against a live hub, as a stranger would meet them: an
unauthenticated token request naming a client_id URL whose host drips its answer is cut off
at the deadline; more such requests at once than the hub reads documents are refused at once
(`temporarily_unavailable`, 503) instead of each holding a thread and its database
connection; the documents it keeps are bounded in number and size. And refreshes: one refused
(more scopes than granted, another resource) leaves the refresh token good, and one narrowed
to fewer scopes gets a token with those only."""

import json
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from django.utils import timezone

from devices.home.models import Light
from mcp_endpoint.auth.oauth import grants
from mcp_endpoint.models import OAuthClient
from tests.hub_support import running_hub
from tests.mcp_endpoint.test_oauth_live import REDIRECT, Owner, call_tool, owner  # noqa: F401 (a fixture)
from tests.oauth_support import DrippingServer, pkce, served_documents

pytestmark = pytest.mark.live
DEADLINE = 2.0
FETCHES = 2
HUB_SETTINGS = {
    "MCP_OAUTH_ALLOW_LOOPBACK_CLIENTS": "1",
    "MCP_OAUTH_DOCUMENT_SECONDS": str(DEADLINE),
    "MCP_OAUTH_DOCUMENT_FETCHES": str(FETCHES),
}


def token_request(base: str, client_id: str) -> tuple[float, httpx.Response]:
    """An unauthenticated code exchange naming `client_id`: (seconds taken, answer)."""
    form = {
        "grant_type": "authorization_code",
        "client_id": client_id,
        "code": "made-up",
        "redirect_uri": "http://127.0.0.1:9/cb",
        "code_verifier": "v" * 50,
    }
    started = time.monotonic()
    answer = httpx.post(
        base + "/oauth/token",
        content=urlencode(form),
        headers={"content-type": "application/x-www-form-urlencoded"},
        timeout=30,
    )
    return time.monotonic() - started, answer


def test_a_dripping_document_host_is_cut_off_at_the_deadline(live_env):
    with DrippingServer() as drip, running_hub(live_env, **HUB_SETTINGS) as hub:
        took, answer = token_request(hub.base, drip.base + "/client.json")
        assert answer.status_code == 400, answer.text
        assert answer.json()["error_description"] == "client metadata document could not be fetched"
        assert DEADLINE - 0.2 < took < DEADLINE + 1.5
        deadline = time.monotonic() + 5
        while drip.hung_up < 1 and time.monotonic() < deadline:  # the hub hung up on it
            time.sleep(0.1)
        assert drip.hung_up == 1


def test_more_document_fetches_than_the_bound_are_refused_at_once(live_env):
    asked = 3 * FETCHES
    with DrippingServer() as drip, running_hub(live_env, **HUB_SETTINGS) as hub:
        urls = [f"{drip.base}/client-{n}.json" for n in range(asked)]
        with ThreadPoolExecutor(asked) as pool:
            answers = list(pool.map(lambda url: token_request(hub.base, url), urls))
    busy = [(took, a) for took, a in answers if a.status_code == 503]
    cut_off = [(took, a) for took, a in answers if a.status_code == 400]
    assert len(busy) == asked - FETCHES and len(cut_off) == FETCHES
    assert all(a.json()["error"] == "temporarily_unavailable" for _, a in busy)
    assert max(took for took, _ in busy) < DEADLINE - 0.5  # at once, not after a deadline
    assert all(took < DEADLINE + 1.5 for took, _ in cut_off)


@pytest.mark.usefixtures("owner")
def test_refused_refreshes_burn_nothing_and_a_narrowed_one_narrows_the_token(live_env):
    with running_hub(live_env) as hub:
        registration = {"client_name": "Narrowing app", "redirect_uris": [REDIRECT]}
        client_id = httpx.post(hub.base + "/oauth/register", json=registration).json()["client_id"]
        verifier, challenge = pkce()
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "scope": "read control",
            "resource": hub.base + "/mcp",
        }
        browser = Owner(hub.base, keep=["read", "control"])
        browser.log_in()
        location = browser.allow(hub.base + "/oauth/authorize?" + urlencode(query))
        code = parse_qs(urlsplit(location).query)["code"][0]

        def token(**form: str) -> httpx.Response:
            return httpx.post(
                hub.base + "/oauth/token",
                content=urlencode({"client_id": client_id, **form}),
                headers={"content-type": "application/x-www-form-urlencoded"},
            )

        issued = token(
            grant_type="authorization_code", code=code, redirect_uri=REDIRECT, code_verifier=verifier
        ).json()
        refresh = issued["refresh_token"]
        wider = token(grant_type="refresh_token", refresh_token=refresh, scope="read control fel")
        assert wider.status_code == 400 and wider.json()["error"] == "invalid_scope"
        elsewhere = token(
            grant_type="refresh_token", refresh_token=refresh, resource="https://else.example/mcp"
        )
        assert elsewhere.json()["error"] == "invalid_target"

        narrowed = token(grant_type="refresh_token", refresh_token=refresh, scope="read")  # still good
        assert narrowed.status_code == 200, narrowed.text
        narrowed = narrowed.json()
        assert narrowed["scope"] == "read"
        switch = {"name": "salon", "on": True}
        refused = call_tool(hub.base, narrowed["access_token"], "set_light_state", switch)
        assert refused.status_code == 403 and "insufficient_scope" in refused.headers["www-authenticate"]
        assert call_tool(hub.base, narrowed["access_token"], "get_alarm_status", {}).status_code == 200

        # The grant keeps what the owner allowed: the next refresh may ask for it again.
        again = token(grant_type="refresh_token", refresh_token=narrowed["refresh_token"])
        assert again.status_code == 200 and again.json()["scope"] == "read control"
        assert call_tool(hub.base, again.json()["access_token"], "set_light_state", switch).status_code == 200
        assert Light.objects.get(name="salon").on is True


def test_kept_client_documents_are_bounded_in_number_and_size(live_env, owner):  # noqa: F811 (the fixture)
    kept = 3
    with (
        served_documents() as site,
        running_hub(live_env, **HUB_SETTINGS, MCP_OAUTH_DOCUMENT_CLIENTS_MAX=str(kept)) as hub,
    ):
        in_use = OAuthClient.objects.create(
            client_id=site.document("/in-use.json", [REDIRECT]), kind="document", redirect_uris=[REDIRECT]
        )
        grants.create(in_use, owner, ["read"], hub.base + "/mcp")
        stale = OAuthClient.objects.create(
            client_id=site.base + "/stale.json", kind="document", redirect_uris=[REDIRECT]
        )
        OAuthClient.objects.filter(pk=stale.pk).update(created_at=timezone.now() - timedelta(days=2))
        for n in range(10):  # ten strangers each make the hub read and keep a document
            padded = {"client_id": f"{site.base}/c{n}.json", "redirect_uris": [REDIRECT], "x": "y" * 60_000}
            site.routes[f"/c{n}.json"] = (200, json.dumps(padded).encode(), 0.0)
            _, answer = token_request(hub.base, f"{site.base}/c{n}.json")
            assert answer.json()["error"] == "invalid_grant"  # read and kept; the code is made up
        names = set(OAuthClient.objects.values_list("client_id", flat=True))
        assert len(names) == kept and in_use.client_id in names and stale.client_id not in names
        assert f"{site.base}/c9.json" in names  # the newest stays, the oldest unused went
        assert all(len(json.dumps(c.metadata)) < 1000 for c in OAuthClient.objects.all())
