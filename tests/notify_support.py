"""Real local receivers for notifications: an HTTP endpoint on loopback that takes Apprise's
`json://` posts, and an SMTP server (aiosmtpd) that takes its `mailto://` e-mails."""

from __future__ import annotations

import json
import threading
import time
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiosmtpd.controller import Controller

from tests.conftest import free_port


class HttpReceiver:
    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        received = self.posts

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                received.append({"path": self.path, **json.loads(body)})
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str = "hook") -> str:
        return f"json://127.0.0.1:{self.port}/{path}"

    def wait(self, count: int = 1, timeout: float = 10) -> list[dict[str, Any]]:
        return _wait(lambda: self.posts, count, timeout)


class SmtpReceiver:
    def __init__(self) -> None:
        self.mails: list[Message] = []
        received = self.mails

        class Handler:
            async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
                received.append(message_from_bytes(envelope.content))
                return "250 OK"

        self.port = free_port()
        self.controller = Controller(Handler(), hostname="127.0.0.1", port=self.port)
        self.controller.start()

    def url(self, to: str) -> str:
        return f"mailto://127.0.0.1:{self.port}?from=hub@example.com&to={to}&mode=insecure"

    def wait(self, count: int = 1, timeout: float = 10) -> list[Message]:
        return _wait(lambda: self.mails, count, timeout)


def _wait(got: Any, count: int, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while len(got()) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    return list(got())
