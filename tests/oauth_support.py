"""What the OAuth tests need around the hub: a certificate authority of their own and an HTTPS
server on loopback that serves client metadata documents (as a hosted connector's own site
would), the PKCE values a client makes, and a logged-in owner's browser."""

from __future__ import annotations

import base64
import contextlib
import datetime
import hashlib
import http.server
import ipaddress
import itertools
import json
import secrets
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

OWNER, PASSWORD = "owner", "owner-pw-for-tests"


def make_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost: (certificate file, key file).
    The certificate file is the CA bundle a hub given SSL_CERT_FILE trusts."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "homehub tests")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_file, key_file


class DocumentServer:
    """Serves `routes` (path -> (status, body bytes, delay seconds)) on a loopback port, over
    HTTPS with `certificate` (cert file, key file), or plain HTTP without."""

    def __init__(self, certificate: tuple[Path, Path] | None = None) -> None:
        self.routes: dict[str, tuple[int, bytes, float]] = {}
        routes = self.routes

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, body, delay = routes.get(self.path, (404, b"{}", 0.0))
                time.sleep(delay)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(OSError):
                    self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        scheme = "http"
        if certificate is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*certificate)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.base = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def document(self, path: str, redirect_uris: list[str], name: str = "Test connector") -> str:
        """Serve a client metadata document at `path`; its URL (the client_id)."""
        url = self.base + path
        body = {"client_id": url, "client_name": name, "redirect_uris": redirect_uris}
        self.routes[path] = (200, json.dumps(body).encode(), 0.0)
        return url

    def __enter__(self) -> DocumentServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def pkce() -> tuple[str, str]:
    """(verifier, S256 challenge)."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


@contextlib.contextmanager
def served_documents(certificate: tuple[Path, Path] | None = None) -> Iterator[DocumentServer]:
    with DocumentServer(certificate) as server:
        yield server


class DrippingServer:
    """A plain HTTP server on loopback that answers every connection one byte a second, for
    ever (a status line that never ends): a client metadata host that would hold a reader up.
    `hung_up`: how many connections the other side closed."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.base = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.hung_up = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()

    def _accept(self) -> None:
        self.listener.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:  # closed
                return
            threading.Thread(target=self._drip, args=(conn,), daemon=True).start()

    def _drip(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)  # the request
            for byte in itertools.cycle(b"HTTP/1.1 200 OK-"):
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    break
                if self._stop.wait(1.0):
                    return
        with self._lock:
            self.hung_up += 1

    def __enter__(self) -> DrippingServer:
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._accepting.join()
        self.listener.close()
