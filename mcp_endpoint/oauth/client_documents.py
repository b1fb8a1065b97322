"""Reading a client's metadata document from its client_id URL, guarded: a client chooses the
URL, so the hub must not become its way into the hub's own network.

- HTTPS only (plain HTTP only to a loopback address, and only with
  MCP_OAUTH_ALLOW_LOOPBACK_CLIENTS, for tests and development);
- the host is resolved once and every address it resolves to must be public (no private,
  loopback, link-local, shared or reserved ones; loopback again only with the allowance); the
  connection goes to an address so checked, never to a second resolution (DNS rebinding);
- no redirects followed, at most MAX_BYTES read, within TIMEOUT_SECONDS in all;
- the document must be a JSON object whose client_id is the URL itself and which names at
  least one redirect URI.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import socket
import ssl
import time
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

MAX_BYTES = 64 * 1024
TIMEOUT_SECONDS = 5.0


class ClientDocumentError(Exception):
    """Why a client's document was refused; the message is the `error_description` sent back."""


def is_document_url(client_id: str) -> bool:
    """A client_id that names a metadata document (rather than a registration's id)."""
    return client_id.startswith(("https://", "http://"))


def fetch(url: str) -> dict[str, Any]:
    """The client's metadata document at `url`, checked; ClientDocumentError if refused."""
    parts = _check_url(url)
    host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    address = _public_address(host, port, plain_http=parts.scheme == "http")
    body = _get(parts.scheme, host, port, address, parts.path + (f"?{parts.query}" if parts.query else ""))
    try:
        document = json.loads(body)
    except ValueError:
        raise ClientDocumentError(f"client metadata document at {url} is not JSON") from None
    if not isinstance(document, dict):
        raise ClientDocumentError(f"client metadata document at {url} is not a JSON object")
    if document.get("client_id") != url:
        raise ClientDocumentError(f"client metadata document's client_id is not its own URL {url}")
    uris = document.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
        raise ClientDocumentError(f"client metadata document at {url} names no redirect_uris")
    return document


def _check_url(url: str) -> Any:
    parts = urlsplit(url)
    allowance = settings.MCP_OAUTH_ALLOW_LOOPBACK_CLIENTS
    if parts.scheme != "https" and not (parts.scheme == "http" and allowance):
        raise ClientDocumentError(f"client_id {url} must be an https URL")
    if not parts.hostname or parts.username or parts.password or parts.fragment:
        raise ClientDocumentError(f"client_id {url} must name a host, without credentials or fragment")
    if parts.path in ("", "/"):
        raise ClientDocumentError(f"client_id {url} must have a path")
    return parts


def _public_address(host: str, port: int, *, plain_http: bool) -> str:
    """The address to connect to: the first the host resolves to, once all of them passed."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise ClientDocumentError(f"client metadata host {host} does not resolve") from None
    addresses = [str(info[4][0]) for info in found]
    if not addresses:
        raise ClientDocumentError(f"client metadata host {host} does not resolve")
    for text in addresses:
        address = ipaddress.ip_address(text.split("%")[0])
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        loopback_allowed = address.is_loopback and settings.MCP_OAUTH_ALLOW_LOOPBACK_CLIENTS
        if loopback_allowed:
            continue
        if plain_http or not address.is_global or address.is_multicast:
            raise ClientDocumentError(
                f"client metadata host {host} resolves to a non-public address ({address}): refused"
            )
    return addresses[0]


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to `address`, verified (and SNI sent) for the URL's host."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        self._tls = ssl.create_default_context()
        super().__init__(host, port, timeout=timeout, context=self._tls)
        self._address = address

    def connect(self) -> None:
        raw = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._tls.wrap_socket(raw, server_hostname=self.host)


class _PinnedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


def _get(scheme: str, host: str, port: int, address: str, target: str) -> bytes:
    deadline = time.monotonic() + TIMEOUT_SECONDS
    kind = _PinnedHTTPSConnection if scheme == "https" else _PinnedHTTPConnection
    connection = kind(host, port, address, TIMEOUT_SECONDS)
    try:
        connection.request("GET", target or "/", headers={"Accept": "application/json"})
        response = connection.getresponse()
        if response.status != 200:
            raise ClientDocumentError(f"client metadata document at {host} answered HTTP {response.status}")
        declared = response.getheader("content-length")
        if declared and declared.isdigit() and int(declared) > MAX_BYTES:
            raise ClientDocumentError(f"client metadata document is larger than {MAX_BYTES} bytes")
        body = b""
        while chunk := response.read1(8192):
            body += chunk
            if len(body) > MAX_BYTES:
                raise ClientDocumentError(f"client metadata document is larger than {MAX_BYTES} bytes")
            if time.monotonic() > deadline:
                raise ClientDocumentError(f"client metadata document took longer than {TIMEOUT_SECONDS:g} s")
        return body
    except (OSError, http.client.HTTPException) as exc:
        raise ClientDocumentError(f"client metadata document at {host} could not be read: {exc}") from None
    finally:
        connection.close()
