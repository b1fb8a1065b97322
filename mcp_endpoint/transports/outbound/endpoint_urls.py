"""Outbound endpoint URLs carry their secret in them (xiaozhi's `wss://…/mcp/?token=<jwt>`, or
in the path on servers that put it there, `wss://…/mcp/<token>/`):
checked here, shown masked everywhere (the admin, the dashboard, commands, logs), and any text
that might quote them (an error from the WebSocket library) redacted before it is logged or
stored."""

from __future__ import annotations

from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from django.core.exceptions import ValidationError

SCHEMES = ("wss", "ws")
MAX_URL_LENGTH = 2000
MASK = "…"
# Query values this short are not secrets worth redacting from free text (`?v=1` would turn
# every 1 of an error message into the mask); the masked URL hides every value whatever its length.
MIN_SECRET_LENGTH = 6
# A path segment reads as a secret (a token in the path), not a word such as `mcp` or `v1`,
# when it is this long, or half as long with letters and digits mixed (a JWT, a hex or base64
# token, a UUID). Masking a word by mistake costs only its display.
MIN_PATH_SECRET_LENGTH = 16


def _secret_segment(segment: str) -> bool:
    text = unquote(segment)
    if len(text) >= MIN_PATH_SECRET_LENGTH:
        return True
    mixed = any(c.isdigit() for c in text) and any(c.isalpha() for c in text)
    return mixed and len(text) >= MIN_PATH_SECRET_LENGTH // 2


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
    """The URL with every query value, any user info and every path segment that reads as a
    secret replaced by `…`: `wss://api.xiaozhi.me/mcp/?token=…`, `wss://host/mcp/…/`."""
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
    path = "/".join(MASK if _secret_segment(segment) else segment for segment in parts.path.split("/"))
    return urlunsplit((parts.scheme, netloc, path, query, ""))


def _secrets(url: str) -> list[str]:
    """What of `url` must never appear in a log or a stored message: its query values and path
    secrets (as written and decoded) and its user info; the longest first."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return [url]
    found = {value for _, value in parse_qsl(parts.query, keep_blank_values=True)}
    found.update(pair.partition("=")[2] for pair in parts.query.split("&"))
    for segment in filter(_secret_segment, parts.path.split("/")):
        found.update({segment, unquote(segment)})
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
