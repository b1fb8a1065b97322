"""The OAuth server's bounds against a live hub, as a stranger would meet them: an
unauthenticated token request naming a client_id URL whose host drips its answer is cut off
at the deadline, and more such requests at once than the hub reads documents are refused at
once (`temporarily_unavailable`, 503) instead of each holding a thread and its database
connection."""

import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlencode

import httpx
import pytest

from tests.hub_support import running_hub
from tests.oauth_support import DrippingServer

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
    assert max(took for took, _ in busy) < 1.0  # at once, not after a deadline
    assert all(took < DEADLINE + 1.5 for took, _ in cut_off)
