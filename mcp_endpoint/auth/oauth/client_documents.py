"""Reading a client's metadata document from its client_id URL, guarded: a client chooses the
URL (and anyone may present one, unauthenticated, at the token endpoint), so the hub must not
become its way into the hub's own network, nor be held up by it.

- HTTPS only (plain HTTP only to a loopback address, and only with
  MCP_OAUTH_ALLOW_LOOPBACK_CLIENTS, for tests and development);
- the host is resolved once and every address it resolves to must be public (`is_public`: no
  private, loopback, link-local, site-local, shared, reserved or multicast ones, nor an IPv6
  address that carries a non-public IPv4 one, such as NAT64's or 6to4's; loopback again only
  with the allowance); the connection goes to an address so checked, never to a second
  resolution (DNS rebinding);
- no redirects followed, at most MAX_BYTES read, and one deadline, MCP_OAUTH_DOCUMENT_SECONDS,
  for all of it (name resolution, connect, TLS handshake, headers, body: a server dripping
  bytes is cut off);
- at most MCP_OAUTH_DOCUMENT_FETCHES reads at once in a process; past it `FetchesBusy` at once;
- whatever stops the read before an answer (no such host, a non-public address, a refused
  connection, TLS, the deadline) gets the same error text, so that it tells nothing about the
  network behind the hub (the reason is logged);
- the document must be a JSON object whose client_id is the URL itself and which names at
  least one redirect URI.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
import ssl
import threading
import time
from typing import Any
from urllib.parse import SplitResult, urlsplit

import h11
from django.conf import settings

logger = logging.getLogger(__name__)

MAX_BYTES = 64 * 1024
MAX_HEADER_BYTES = 16 * 1024
NOT_FETCHED = "client metadata document could not be fetched"

# IPv6 ranges that carry an IPv4 address in their last 32 bits (RFC 4291's IPv4-compatible and
# IPv4-mapped, RFC 2765's IPv4-translated, RFC 6052's well-known NAT64 prefix): such an address
# is as public as the IPv4 address it carries.
_CARRYING_IPV4 = tuple(
    ipaddress.ip_network(net) for net in ("::/96", "::ffff:0:0/96", "::ffff:0:0:0/96", "64:ff9b::/96")
)
# Never public whatever they carry: RFC 8215's local-use NAT64 prefix and Teredo (2001::/32).
_NEVER_PUBLIC = tuple(ipaddress.ip_network(net) for net in ("64:ff9b:1::/48", "2001::/32"))


class ClientDocumentError(Exception):
    """Why a client's document was refused; the message is the `error_description` sent back."""


class FetchesBusy(ClientDocumentError):
    """As many documents as MCP_OAUTH_DOCUMENT_FETCHES are being read already."""


def is_document_url(client_id: str) -> bool:
    """A client_id that names a metadata document (rather than a registration's id)."""
    return client_id.startswith(("https://", "http://"))


def fetch(url: str) -> dict[str, Any]:
    """The client's metadata document at `url`, checked; ClientDocumentError if refused."""
    parts = _check_url(url)
    with _fetch_slots:
        body = _read(parts, time.monotonic() + settings.MCP_OAUTH_DOCUMENT_SECONDS)
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


def is_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """An address on the public Internet: what `ipaddress` calls global, except multicast,
    reserved and (IPv6) site-local ones; an IPv6 address carrying an IPv4 one (see
    `_CARRYING_IPV4`, and 6to4's 2002::/16) only if that one is public."""
    if isinstance(address, ipaddress.IPv6Address):
        if any(address in net for net in _NEVER_PUBLIC):
            return False
        if address.sixtofour is not None:
            return is_public(address.sixtofour)
        if any(address in net for net in _CARRYING_IPV4):
            return is_public(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
        if address.is_site_local:
            return False
    return address.is_global and not (address.is_multicast or address.is_reserved)


class _Slots:
    """How many documents this process is reading; at most MCP_OAUTH_DOCUMENT_FETCHES."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy = 0

    def __enter__(self) -> None:
        with self._lock:
            if self._busy >= settings.MCP_OAUTH_DOCUMENT_FETCHES:
                raise FetchesBusy("too many client metadata documents are being fetched: retry shortly")
            self._busy += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._busy -= 1


_fetch_slots = _Slots()


def _check_url(url: str) -> SplitResult:
    parts = urlsplit(url)
    allowance = settings.MCP_OAUTH_ALLOW_LOOPBACK_CLIENTS
    if parts.scheme != "https" and not (parts.scheme == "http" and allowance):
        raise ClientDocumentError(f"client_id {url} must be an https URL")
    if not parts.hostname or parts.username or parts.password or parts.fragment:
        raise ClientDocumentError(f"client_id {url} must name a host, without credentials or fragment")
    if parts.path in ("", "/"):
        raise ClientDocumentError(f"client_id {url} must have a path")
    try:
        parts.port  # noqa: B018 (raises for a port out of range)
    except ValueError:
        raise ClientDocumentError(f"client_id {url} names an invalid port") from None
    return parts


class _NotFetched(Exception):
    """Why the read stopped before an answer: logged, never told to the client."""


def _read(parts: SplitResult, deadline: float) -> bytes:
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        address = _public_address(host, port, deadline, plain_http=parts.scheme == "http")
        return _get(parts, address, port, deadline)
    except (_NotFetched, OSError, h11.ProtocolError) as reason:
        logger.info("client metadata document at %s not fetched: %s", parts.geturl()[:300], reason)
        raise ClientDocumentError(NOT_FETCHED) from None


def _resolve(host: str, port: int, deadline: float) -> list[str]:
    """The addresses `host` resolves to, by the deadline. The system's resolver takes no
    timeout (a client's own name server could answer slowly): it resolves in a thread of its
    own, left to end by itself when the deadline passes first."""
    found: list[str] = []
    failed: list[BaseException] = []
    done = threading.Event()

    def resolve() -> None:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            found.extend(str(info[4][0]) for info in infos)
        except (OSError, UnicodeError) as error:
            failed.append(error)
        finally:
            done.set()

    threading.Thread(target=resolve, name="client-document-resolve", daemon=True).start()
    if not done.wait(_left(deadline)):
        raise _NotFetched(f"{host} did not resolve within {settings.MCP_OAUTH_DOCUMENT_SECONDS:g} s")
    if failed or not found:
        raise _NotFetched(f"{host} does not resolve ({failed[0] if failed else 'no address'})")
    return found


def _public_address(host: str, port: int, deadline: float, *, plain_http: bool) -> str:
    """The address to connect to: the first the host resolves to, once all of them passed."""
    addresses = _resolve(host, port, deadline)
    for text in addresses:
        address = ipaddress.ip_address(text.split("%")[0])
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if address.is_loopback and settings.MCP_OAUTH_ALLOW_LOOPBACK_CLIENTS:
            continue
        if plain_http or not is_public(address):
            raise _NotFetched(f"{host} resolves to a non-public address ({address})")
    return addresses[0]


def _left(deadline: float) -> float:
    """The time left before `deadline` (the socket's timeout for its next step)."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise _NotFetched(f"took longer than {settings.MCP_OAUTH_DOCUMENT_SECONDS:g} s")
    return left


def _get(parts: SplitResult, address: str, port: int, deadline: float) -> bytes:
    """GET the URL from `address`, every step given only the time left (CPython's TLS handshake
    keeps to its socket's timeout in all), over h11 so that no read waits past the deadline."""
    raw = socket.create_connection((address, port), timeout=_left(deadline))
    sock: socket.socket = raw
    try:
        if parts.scheme == "https":
            raw.settimeout(_left(deadline))
            sock = ssl.create_default_context().wrap_socket(raw, server_hostname=parts.hostname)
        http = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEADER_BYTES)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        headers = [("Host", parts.netloc), ("Accept", "application/json"), ("Connection", "close")]
        request = http.send(h11.Request(method="GET", target=target, headers=headers))
        sock.settimeout(_left(deadline))
        sock.sendall((request or b"") + (http.send(h11.EndOfMessage()) or b""))
        body = b""
        while True:
            event = http.next_event()
            if event is h11.NEED_DATA:
                sock.settimeout(_left(deadline))
                http.receive_data(sock.recv(8192))
            elif isinstance(event, h11.Response):
                _check_response(event)
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > MAX_BYTES:
                    raise ClientDocumentError(f"client metadata document is larger than {MAX_BYTES} bytes")
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                return body
    finally:
        sock.close()


def _check_response(response: h11.Response) -> None:
    if response.status_code != 200:
        raise ClientDocumentError(f"client metadata document answered HTTP {response.status_code}")
    for name, value in response.headers:
        if name == b"content-length" and value.isdigit() and int(value) > MAX_BYTES:
            raise ClientDocumentError(f"client metadata document is larger than {MAX_BYTES} bytes")
