import json
import sys
import time
import urllib.error
import urllib.request

from django.core.management.base import BaseCommand

POLL_SECONDS = 0.5


def ask(url: str) -> tuple[str, bool]:
    """The body of the answer, and whether it was a 200."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read().decode(errors="replace").strip(), response.status == 200
    except urllib.error.HTTPError as exc:  # a 503 says what is down
        return exc.read().decode(errors="replace").strip(), False
    except OSError as exc:
        return json.dumps({"status": "unreachable", "error": type(exc).__name__}), False


class Command(BaseCommand):
    help = (
        "Ask a hub process's /healthz (--full: /healthz?full=1) and exit 0 on 200, else 1, waiting "
        "up to --wait seconds for a 200 (a process still starting). Prints the last answer. "
        "deploy/systemd/daphne@.service runs it after start, so that `systemctl restart` of one "
        "instance returns once that instance serves again."
    )

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8000, help="the hub's port on 127.0.0.1")
        parser.add_argument("--full", action="store_true", help="every dependency, the broker included")
        parser.add_argument("--wait", type=float, default=0.0, help="seconds to keep asking")

    def handle(self, *args, port, full, wait, **options):
        url = f"http://127.0.0.1:{port}/healthz" + ("?full=1" if full else "")
        deadline = time.monotonic() + wait
        while True:
            answer, healthy = ask(url)
            if healthy or time.monotonic() >= deadline:
                break
            time.sleep(POLL_SECONDS)
        self.stdout.write(answer)
        if not healthy:
            sys.exit(1)
