"""Production settings: `check --deploy` is clean with deploy/homehub.env.example, and with
it daphne redirects plain HTTP, sends the HTTPS-only headers and cookies, and serves the hashed,
compressed static files."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys

import httpx
import pytest

from tests.deploy_support import env_example
from tests.devices_support import hub
from tests.hub_support import ROOT

pytestmark = pytest.mark.live


def production_env(base: dict[str, str], **overrides: str) -> dict[str, str]:
    """`base` with the example's settings, its placeholders filled with throwaway values."""
    env = dict(base)
    for name, value in env_example().items():
        if "<" in value:
            value = secrets.token_urlsafe(50) if name == "DJANGO_SECRET_KEY" else "placeholder"
        env[name] = value
    # Services of the machine running the tests, not of the example's host.
    for name in ("DATABASE_URL", "REDIS_URL", "PROMETHEUS_MULTIPROC_DIR"):
        env.pop(name, None)
        if name in base:
            env[name] = base[name]
    env.update(overrides)
    return env


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


def test_check_deploy_is_clean_with_the_example_environment(tmp_path):
    env = production_env(dict(os.environ), DJANGO_STATIC_ROOT=str(tmp_path))
    done = manage(env, "check", "--deploy", "--fail-level", "WARNING")
    assert done.returncode == 0, done.stderr
    assert "System check identified no issues" in done.stdout
    assert "WARNING" not in done.stderr


def test_runs_with_embedded_defaults():
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    done = manage(env, "check")
    assert done.returncode == 0, done.stderr


def test_a_tasks_queue_it_cannot_have_stops_the_hub_at_start():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "TASKS_", "REDIS_URL"))}
    unknown = manage({**env, "TASKS_BACKEND": "celery"}, "check")
    assert unknown.returncode != 0 and "TASKS_BACKEND='celery': use database or rq" in unknown.stderr
    no_redis = manage({**env, "TASKS_BACKEND": "rq"}, "check")
    assert no_redis.returncode != 0 and "set TASKS_REDIS_URL or REDIS_URL" in no_redis.stderr


def test_production_hub_serves_hashed_compressed_static_files_and_secure_headers(live_env, tmp_path):
    env = production_env(
        live_env, DJANGO_STATIC_ROOT=str(tmp_path / "static"), DJANGO_ALLOWED_HOSTS="127.0.0.1"
    )
    done = manage(env, "collectstatic", "--noinput")
    assert done.returncode == 0, done.stderr
    with hub(env) as base:
        # Plain HTTP straight to daphne is sent to HTTPS...
        plain = httpx.get(base + "/login/")
        assert plain.status_code == 301
        assert plain.headers["location"].startswith("https://")
        # ...`/mcp` too, which bypasses Django's middleware: a 308, so the client repeats its POST...
        call = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        mcp = httpx.post(base + "/mcp?x=1", json=call)
        assert mcp.status_code == 308
        assert mcp.headers["location"] == f"https://{base.removeprefix('http://')}/mcp?x=1"
        assert httpx.post(base + "/mcp", json=call, headers={"Host": "evil.example"}).status_code == 400
        # ...and over HTTPS (as nginx says) it is the MCP endpoint, asking for a token.
        assert httpx.post(base + "/mcp", json=call, headers={"X-Forwarded-Proto": "https"}).status_code == 401
        # ...except the probes and scrapers that ask daphne itself.
        assert httpx.get(base + "/healthz").status_code in {200, 503}
        assert httpx.get(base + "/metrics").status_code == 401  # the example sets METRICS_TOKEN
        # ...while a request nginx forwarded from HTTPS is served, with the secure headers.
        proxied = {"X-Forwarded-Proto": "https"}
        page = httpx.get(base + "/login/", headers=proxied)
        assert page.status_code == 200
        hsts = page.headers["strict-transport-security"]
        assert hsts == "max-age=31536000; includeSubDomains"  # preload: the operator's own step
        assert page.headers["x-content-type-options"] == "nosniff"
        assert page.headers["x-frame-options"] == "DENY"
        assert page.headers["referrer-policy"] == "same-origin"
        assert "secure" in page.headers["set-cookie"].lower()  # the CSRF cookie
        css = re.search(r'href="(/static/dashboard/app\.[0-9a-f]{12}\.css)"', page.text)
        assert css, "the page links the hashed stylesheet"
        static = httpx.get(base + css.group(1), headers={**proxied, "Accept-Encoding": "gzip"})
        assert static.status_code == 200
        assert static.headers["content-encoding"] == "gzip"
        assert "immutable" in static.headers["cache-control"]
        assert static.text == (ROOT / "dashboard" / "static" / "dashboard" / "app.css").read_text()
