"""Issue 28's page budget on the demo: Home's first paint against its 1 s target, and the
script and style each dashboard page loads against its 300 KB limit.

Runs what `make demo` runs (migrate, seed_home, an owner, `serve --demo` with its simulated
agents, private Mosquitto and four automations) over a throwaway SQLite database, logs in in
Debian's headless Chromium (Playwright), weighs every page once, then opens Home `--runs`
times in a fresh uncached tab and reports the median first paint over the target as a ratio
(below 1: met). The same measurement as tests/dashboard/test_page_weight.py, which asserts
only the weight limit.

    .venv/bin/python bench/bench_pages.py [--runs 15] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_automations import start, stop, wait_port  # noqa: E402
from harness import free_port  # noqa: E402

from tests.page_weight_support import (  # noqa: E402
    BUDGET_BYTES,
    FIRST_PAINT_TARGET_MS,
    home_first_paint,
    weigh_every_page,
)

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
OWNER, PASSWORD = "bench-owner", "bench-pages-password"


def manage(env: dict[str, str], *argv: str) -> None:
    subprocess.run([sys.executable, "manage.py", *argv], cwd=ROOT, env=env, check=True, capture_output=True)


def measure(base: str, runs: int) -> tuple[dict[str, dict[str, int]], list[dict[str, float]]]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
        page = context.new_page()
        page.goto(base + "/login/")
        page.get_by_label("Username").fill(OWNER)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(base + "/")
        weights = weigh_every_page(context, page, base)
        paints = [home_first_paint(context, base) for _ in range(runs)]
        browser.close()
    return weights, paints


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15, help="Home loads whose first paint is measured")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench_pages_"))
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{workdir}/demo.sqlite3",
        "MQTT_URL": f"mqtt://127.0.0.1:{free_port()}",  # nothing there: the demo starts its own Mosquitto
        "HOMEHUB_LOCATION": os.environ.get("HOMEHUB_LOCATION", "14.63,-90.51"),
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("REDIS_URL", None)
    manage(env, "migrate", "--noinput")
    manage(env, "seed_home")
    create = (
        "from django.contrib.auth import get_user_model; "
        f"get_user_model().objects.create_superuser({OWNER!r}, 'bench@example.com', {PASSWORD!r})"
    )
    manage(env, "shell", "-c", create)
    port, log = free_port(), workdir / "demo.log"
    demo = start(["serve", "--demo", "--host", "127.0.0.1", "--port", str(port)], env, log, ROOT)
    try:
        wait_port(port, demo, log)
        time.sleep(3)  # its agents connect and its first readings land
        weights, paints = measure(f"http://127.0.0.1:{port}", args.runs)
    finally:
        stop(demo)  # the demo stops its agents and its private broker with it
    first = [p.get("first-paint", p.get("first-contentful-paint", 0.0)) for p in paints]
    median = statistics.median(first)
    print(f"load {os.getloadavg()[0]:.2f}; {len(first)} loads of Home, uncached")
    print(
        f"Home first paint: median {median:.0f} ms (min {min(first):.0f}, max {max(first):.0f}); "
        f"target {FIRST_PAINT_TARGET_MS:.0f} ms; ratio {median / FIRST_PAINT_TARGET_MS:.2f}x "
        f"({'met' if median < FIRST_PAINT_TARGET_MS else 'missed'})"
    )
    print(f"{'page':<60} {'files':>5} {'bytes':>8} {'of 300 KB':>9}")
    for path, weight in weights.items():
        share = weight["total_bytes"] / BUDGET_BYTES
        print(f"{path:<60} {weight['files']:>5} {weight['total_bytes']:>8} {share:>8.0%}")
    if args.json:
        args.json.write_text(json.dumps({"first_paint_ms": first, "pages": weights}, indent=2))


if __name__ == "__main__":
    main()
