"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned with
node 22 in tests/conformance/package.json; `make test` installs it with `npm ci`) runs
every server scenario against `/mcp` of a live daphne on a loopback port, with the test-only
app tests/conformance_app providing the suite's fixture and diagnostic tools, resources
and prompts.

Two lines of the suite are pinned side by side: 0.1.16 (the package's `latest`) and the
0.2 line (npm alias `conformance-next`). Each runs, in one invocation per era, every server
scenario it has for that era (`--suite all --spec-version <era>`): the handshake era
(`2025-11-25`, cumulative: back to 2025-03-26's session lifecycle) and the stateless era
(`2026-07-28`, which 0.1.16 does not know). The 0.2 line's extension scenarios, which belong
to no era, run in one more invocation (`--suite all`, each at the version the suite infers;
only the extensions' results are judged there).

The suite's client sends no credentials, so tests/conformance/inject-auth.mjs, preloaded
into node, adds this test's bearer token to each request it makes to the hub; the hub itself
runs with its ordinary authentication.

Every scenario must pass (no failed check, no warning) except those in NOT_YET for its line
and era, each with its reason; docs/MCP_CONFORMANCE.md lists the same ones. A listed
scenario that passes fails the test too, so the list stays current.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.hub_support import CONFORMANCE_SETTINGS

ROOT = Path(__file__).resolve().parents[2]
SUITE_DIR = ROOT / "tests" / "conformance"
NODE = SUITE_DIR / "node_modules" / ".bin" / "node"
INJECT_AUTH = SUITE_DIR / "inject-auth.mjs"
DOC = ROOT / "docs" / "MCP_CONFORMANCE.md"
SUITE_TIMEOUT = 120  # seconds for one line and era; each takes under 10 here


@dataclass(frozen=True)
class Line:
    """One pinned line of the suite: its npm package directory under node_modules."""

    name: str
    package: str

    @property
    def cli(self) -> Path:
        return SUITE_DIR / "node_modules" / self.package / "dist" / "index.js"


STABLE = Line("0.1", "@modelcontextprotocol/conformance")
NEXT = Line("0.2", "conformance-next")
HANDSHAKE, STATELESS = "2025-11-25", "2026-07-28"
EXTENSIONS = "extensions"  # optional extensions (SEP-1730), outside the eras
# 0.1.16 has no 2026-07-28 era, and its `extension` version lists no server scenario.
RUNS = [(STABLE, HANDSHAKE), (NEXT, HANDSHAKE), (NEXT, STATELESS), (NEXT, EXTENSIONS)]
# The one list of scenarios that cannot pass yet, per line and era, with the reason (none now).
NOT_YET: dict[tuple[str, str], dict[str, str]] = {
    (STABLE.name, HANDSHAKE): {},
    (NEXT.name, HANDSHAKE): {},
    (NEXT.name, STATELESS): {},
    (NEXT.name, EXTENSIONS): {},
}

# The tasks extension's scenarios (SEP-2663), each of which must run and pass in the extensions run.
TASKS_SCENARIOS = {
    f"tasks-{name}"
    for name in (
        "lifecycle",
        "capability-negotiation",
        "wire-fields",
        "request-state-removal",
        "mrtr-input",
        "request-headers",
        "dispatch-and-envelope",
        "required-task-error",
        "mrtr-composition",
        "status-notifications",
    )
}

pytestmark = [pytest.mark.live, pytest.mark.conformance]

RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")


def _suite_installed(line: Line) -> None:
    if NODE.exists() and line.cli.exists():
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


def _server_scenarios(line: Line, era: str) -> set[str]:
    if era == EXTENSIONS:
        listed = _node(str(line.cli), "list", "--server")
        assert listed.returncode == 0, listed.stderr
        return set(re.findall(r"^\s+- (\S+) \[extension\]$", listed.stdout, re.MULTILINE))
    listed = _node(str(line.cli), "list", "--server", "--spec-version", era)
    assert listed.returncode == 0, listed.stderr
    return set(re.findall(r"^\s+- (\S+)", listed.stdout, re.MULTILINE))


@pytest.fixture
def conformance_server(live_env, request):
    """daphne over the test database, with the conformance fixtures installed."""
    live_env["DJANGO_SETTINGS_MODULE"] = CONFORMANCE_SETTINGS
    return request.getfixturevalue("daphne_server")


def test_not_yet_scenarios_are_documented():
    text = DOC.read_text()
    for (line, era), scenarios in NOT_YET.items():
        for scenario in scenarios:
            assert f"`{scenario}`" in text, f"{scenario} ({line}, {era}) is not listed in {DOC.name}"


@pytest.mark.parametrize(("line", "era"), RUNS, ids=[f"{line.name}-{era}" for line, era in RUNS])
def test_official_conformance_suite(line, era, conformance_server, make_token, tmp_path):
    _suite_installed(line)
    url = conformance_server + "/mcp"
    env = {
        **os.environ,
        "HOMEHUB_CONFORMANCE_TOKEN": make_token(name="conformance"),
        "HOMEHUB_CONFORMANCE_URL": url,
    }
    version = [] if era == EXTENSIONS else ["--spec-version", era]
    started = time.monotonic()
    run = _node(
        "--import",
        INJECT_AUTH.as_uri(),
        str(line.cli),
        "server",
        "--suite",
        "all",
        *version,
        "--url",
        url,
        "--output-dir",
        str(tmp_path),
        env=env,
        timeout=SUITE_TIMEOUT,
    )
    print(f"conformance {line.name} at {era}: {time.monotonic() - started:.1f} s")
    expected = _server_scenarios(line, era)
    results: dict[str, list[dict]] = {}
    for checks in tmp_path.glob("*/checks.json"):
        match = RESULT_DIR.match(checks.parent.name)
        assert match, checks.parent.name
        if era != EXTENSIONS or match["scenario"] in expected:  # the eras' own runs judge the rest
            results[match["scenario"]] = json.loads(checks.read_text())
    assert results, f"the suite produced no results:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"

    if era == EXTENSIONS:
        assert expected >= TASKS_SCENARIOS, f"the suite lists no {sorted(TASKS_SCENARIOS - expected)}"
    missing = expected - set(results)
    assert not missing, f"scenarios that did not run: {sorted(missing)}\n{run.stderr[-3000:]}"
    problems = {
        scenario: [
            f"{c['status']} {c.get('id') or c.get('name')}: {c.get('errorMessage') or c.get('description')}"
            for c in checks
            if c.get("status") in ("FAILURE", "WARNING")
        ]
        for scenario, checks in results.items()
    }
    failing = {scenario for scenario, found in problems.items() if found}
    not_yet = NOT_YET[(line.name, era)]
    unexpected = {scenario: problems[scenario] for scenario in sorted(failing - set(not_yet))}
    assert not unexpected, "conformance scenarios failing:\n" + json.dumps(unexpected, indent=2)
    stale = sorted(set(not_yet) - failing)
    assert not stale, f"these pass now: remove them from NOT_YET and docs/MCP_CONFORMANCE.md: {stale}"
