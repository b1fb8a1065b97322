"""Each server log line comes out once (issue 28: with DJANGO_DEBUG on, every line of Django's
loggers appeared twice, through Django's own console handler and the root's): a live
`manage.py serve`'s output shows a request's log line once, with DEBUG on and off."""

import httpx
import pytest

from tests.hub_support import running_hub

pytestmark = pytest.mark.live


@pytest.mark.parametrize("debug", ["1", "0"])
def test_a_live_serve_logs_each_line_once(live_env, debug):
    with running_hub(live_env, serve_args=("--no-mqtt",), DJANGO_DEBUG=debug) as hub:
        assert httpx.get(hub.base + "/no-such-page-for-the-log/").status_code == 404
        hub.stop()
        lines = hub.output().splitlines()
    assert lines.count("Not Found: /no-such-page-for-the-log/") == 1, lines
    assert sum("Listening on TCP address" in line for line in lines) == 1, lines
