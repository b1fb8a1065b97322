"""Issue 28's budget in a real Chromium: no dashboard page loads over 300 KB of script and
style. Home's first paint is measured here too and written to artifacts/page-weight.json, but
not asserted: its 1 s is a target, reported by bench/bench_pages.py and docs/PERFORMANCE.md."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.dashboard.test_dashboard_browser import (  # noqa: F401 (fixtures)
    CHROMIUM,
    browser,
    log_in,
    owner,
    seed_telemetry_and_agent,
)
from tests.page_weight_support import BUDGET_BYTES, FIRST_PAINT_TARGET_MS, home_first_paint, weigh_every_page

ARTIFACT = Path(__file__).resolve().parents[2] / "artifacts" / "page-weight.json"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.live,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed"),
]


def test_no_page_loads_over_300_kb_of_script_and_style(daphne_server, owner, browser):  # noqa: F811
    from automations.authoring import save_automation

    base = daphne_server
    seed_telemetry_and_agent()
    save_automation(  # the editor opens it
        {
            "name": "Garage with the salon",
            "triggers": [{"type": "light", "name": "salon", "to": "on"}],
            "actions": [{"tool": "set_light_state", "arguments": {"name": "garage", "on": True}}],
        },
        actor="maria",
        interface="dashboard",
        user=owner,
    )
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    log_in(page, base)

    weights = weigh_every_page(context, page, base)
    paint = home_first_paint(context, base)
    context.close()

    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    ARTIFACT.write_text(
        json.dumps(
            {"budget_bytes": BUDGET_BYTES, "first_paint_target_ms": FIRST_PAINT_TARGET_MS,
             "home_first_paint_ms": paint, "pages": weights},
            indent=2,
        )
    )  # fmt: skip
    assert len(weights) == 14 and all(w["total_bytes"] > 0 for w in weights.values())
    over = {path: w["total_bytes"] for path, w in weights.items() if w["total_bytes"] > BUDGET_BYTES}
    assert over == {}
    assert paint  # measured (the figure is in the artifact; its target is the bench's)
