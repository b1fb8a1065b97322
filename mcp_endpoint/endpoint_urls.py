"""Outbound endpoint URLs carry their secret in them (xiaozhi's `wss://…/mcp/?token=<jwt>`):
checked here, shown masked everywhere (the admin, the dashboard, commands, logs), and any text
that might quote them (an error from the WebSocket library) redacted before it is logged or
stored."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit, urlunsplit

from django.core.exceptions import ValidationError

SCHEMES = ("wss", "ws")
MAX_URL_LENGTH = 2000
MASK = "…"
# Query values this short are not secrets worth redacting from free text (`?v=1` would turn
# every 1 of an error message into the mask); the masked URL hides every value whatever its length.
MIN_SECRET_LENGTH = 6


def validate_endpoint_url(url: str) -> None:
    """A `ws://` or `wss://` URL with a host. The messages never quote the URL."""
    if len(url) > MAX_URL_LENGTH:
        raise ValidationError(f"The endpoint URL is longer than {MAX_URL_LENGTH} characters.")
    if any(c.isspace() for c in url):
        raise ValidationError("The endpoint URL contains spaces or line breaks: paste it as one piece.")
    try:
        parts = urlsplit(url)
        host, _port = parts.hostname, parts.port
    except ValueError:
        raise ValidationError("The endpoint URL is not a valid URL.") from None
    if parts.scheme.lower() not in SCHEMES:
        raise ValidationError("The endpoint URL must start with wss:// (or ws:// on a local network).")
    if not host:
        raise ValidationError("The endpoint URL names no host.")


def mask_url(url: str) -> str:
    """The URL with every query value and any user info replaced by `…`:
    `wss://api.xiaozhi.me/mcp/?token=…`."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    _userinfo, at, hostport = parts.netloc.rpartition("@")
    netloc = f"{MASK}@{hostport}" if at else hostport
    query = ""
    if parts.query:
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        query = "&".join(f"{key}={MASK}" for key, _ in pairs) if pairs else MASK
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def _secrets(url: str) -> list[str]:
    """What of `url` must never appear in a log or a stored message: its query values (as
    written and decoded) and its user info; the longest first."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return [url]
    found = {value for _, value in parse_qsl(parts.query, keep_blank_values=True)}
    found.update(pair.partition("=")[2] for pair in parts.query.split("&"))
    userinfo, at, _ = parts.netloc.rpartition("@")
    if at:
        found.add(userinfo)
    return sorted((s for s in found if len(s) >= MIN_SECRET_LENGTH), key=len, reverse=True)


def redact(text: str, url: str) -> str:
    """`text` with `url` masked and each of its secrets replaced by `…` wherever it appears."""
    text = text.replace(url, mask_url(url))
    for secret in _secrets(url):
        text = text.replace(secret, MASK)
    return text
