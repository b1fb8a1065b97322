"""Text and JSON that peers send, made storable on every database before it is written.

PostgreSQL refuses NUL in text and JSON (`\\u0000`), and a lone surrogate (which JSON's
`\\ud800` escape produces) is not UTF-8 at all: one such value would fail the whole batch
or transaction it travels in. Both become U+FFFD, the replacement character.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import AfterValidator

REPLACEMENT = "\ufffd"


def storable_text(text: str) -> str:
    if text.isascii():
        return text.replace("\x00", REPLACEMENT) if "\x00" in text else text
    text = text.replace("\x00", REPLACEMENT)
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def is_storable(text: str) -> bool:
    """Whether `text` can be stored (and looked up) as it is."""
    return storable_text(text) == text


def _lookup(text: str) -> str:
    if not is_storable(text):
        raise ValueError("must not contain NUL or lone surrogates")
    return text


# A name or id a tool looks up: text no row can hold is refused as a bad argument, rather
# than failing at the database (PostgreSQL refuses NUL even in a WHERE clause).
LookupText = Annotated[str, AfterValidator(_lookup)]


def storable_json(value: Any) -> Any:
    """The same value with every string (keys included) made storable."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        return {storable_text(str(k)): storable_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable_json(v) for v in value]
    return value


def bounded_json(value: Any, limit: int) -> Any:
    """A peer's JSON value for the audit trail: storable, and cut to `limit` characters of
    JSON (as `{"truncated": ...}`) when longer."""
    value = storable_json(value)
    text = json.dumps(value, ensure_ascii=False, default=str)
    return value if len(text) <= limit else {"truncated": text[:limit]}
