"""The test files that the configuration, the docs and the code name as their proof exist:
a test moved without its mentions leaves a reader looking for nothing (as the deployment
rehearsal found in deploy/mosquitto/mosquitto.conf)."""

import re

from tests.hub_support import ROOT

NAMING = ["deploy", "docs", "homehub", ".ci", "Makefile", "README.md"]


def test_every_test_file_named_outside_the_tests_exists():
    missing = []
    for place in NAMING:
        path = ROOT / place
        for source in [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]:
            text = source.read_text(errors="replace")
            for named in set(re.findall(r"\btests/[\w/.*-]+\.py\b", text)):
                if not any(ROOT.glob(named)):
                    missing.append(f"{source.relative_to(ROOT)}: {named}")
    assert not missing, missing
