"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned with
node 22 in tests/conformance/package.json; `make test` installs it with `npm ci`) runs
every server scenario against `/mcp` of a live daphne on a loopback port, with the test-only
app tests/conformance_app providing the suite's fixture tools, resources and prompts.

The suite's client sends no credentials, so tests/conformance/inject-auth.mjs, preloaded
into node, adds this test's bearer token to each request it makes to the hub; the hub itself
runs with its ordinary authentication.

Every scenario must pass (no failed check, no warning) except those in NOT_YET, each with
its reason; docs/MCP_CONFORMANCE.md lists the same ones.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.hub_support import CONFORMANCE_SETTINGS

ROOT = Path(__file__).resolve().parents[2]
SUITE_DIR = ROOT / "tests" / "conformance"
NODE = SUITE_DIR / "node_modules" / ".bin" / "node"
CLI = SUITE_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
INJECT_AUTH = SUITE_DIR / "inject-auth.mjs"
DOC = ROOT / "docs" / "MCP_CONFORMANCE.md"
SUITE_TIMEOUT = 100  # seconds; the whole suite takes about 10 here

# The one list of scenarios that cannot pass yet, with the reason (none at the moment).
NOT_YET: dict[str, str] = {}

pytestmark = [pytest.mark.live, pytest.mark.conformance]

RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")


def _suite_installed() -> None:
    if NODE.exists() and CLI.exists():
        return
    message = f"the conformance suite is not installed: npm ci --prefix {SUITE_DIR.relative_to(ROOT)}"
    if os.environ.get("CI"):
        pytest.fail(message + " (make test does it)")
    pytest.skip(message)


def _node(*args: str, env: dict[str, str] | None = None, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(NODE), *args],
        cwd=SUITE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _server_scenarios() -> set[str]:
    listed = _node(str(CLI), "list", "--server")
    assert listed.returncode == 0, listed.stderr
    return set(re.findall(r"^\s+- (\S+)", listed.stdout, re.MULTILINE))


@pytest.fixture
def conformance_server(live_env, request):
    """daphne over the test database, with the conformance fixtures installed."""
    live_env["DJANGO_SETTINGS_MODULE"] = CONFORMANCE_SETTINGS
    return request.getfixturevalue("daphne_server")


def test_not_yet_scenarios_are_documented():
    text = DOC.read_text()
    for scenario in NOT_YET:
        assert f"`{scenario}`" in text, f"{scenario} is not listed in {DOC.name}"


def test_official_conformance_suite(conformance_server, make_token, tmp_path):
    _suite_installed()
    url = conformance_server + "/mcp"
    env = {
        **os.environ,
        "HOMEHUB_CONFORMANCE_TOKEN": make_token(name="conformance"),
        "HOMEHUB_CONFORMANCE_URL": url,
    }
    run = _node(
        "--import",
        INJECT_AUTH.as_uri(),
        str(CLI),
        "server",
        "--suite",
        "all",
        "--url",
        url,
        "--output-dir",
        str(tmp_path),
        env=env,
        timeout=SUITE_TIMEOUT,
    )
    results: dict[str, list[dict]] = {}
    for checks in tmp_path.glob("*/checks.json"):
        match = RESULT_DIR.match(checks.parent.name)
        assert match, checks.parent.name
        results[match["scenario"]] = json.loads(checks.read_text())
    assert results, f"the suite produced no results:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"

    missing = _server_scenarios() - set(results)
    assert not missing, f"scenarios that did not run: {sorted(missing)}\n{run.stderr[-3000:]}"
    problems = {
        scenario: [
            f"{c['status']} {c.get('name')}: {c.get('errorMessage') or c.get('description')}"
            for c in checks
            if c.get("status") in ("FAILURE", "WARNING")
        ]
        for scenario, checks in results.items()
    }
    failing = {scenario for scenario, found in problems.items() if found}
    unexpected = {scenario: problems[scenario] for scenario in sorted(failing - set(NOT_YET))}
    assert not unexpected, "conformance scenarios failing:\n" + json.dumps(unexpected, indent=2)
    stale = sorted(set(NOT_YET) - failing)
    assert not stale, f"these pass now: remove them from NOT_YET and docs/MCP_CONFORMANCE.md: {stale}"
