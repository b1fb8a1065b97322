"""A device tool's MCP result as a household reads it on the Devices page: its text content as
text, structured content (or a text that is a JSON object, as the firmware writes a status) as
rows of a small key/value table, an error marked as one; never the raw MCP JSON. The hub's own
words are in the language of the request that made the call (the device's words as it sent them).

The shape is plain JSON (it is kept in the session between a form's POST and the page it
redirects to)."""

from __future__ import annotations

import json
from typing import Any, TypedDict

from django.utils.translation import gettext

from dashboard.templatetags.dashboard_tags import readable

MAX_ROWS = 60
MAX_TEXT = 4000


class Readable(TypedDict):
    """`error`: the device said the call failed; `texts`: paragraphs; `rows`: (label, value)."""

    error: bool
    texts: list[str]
    rows: list[list[str]]


def label(key: str) -> str:
    """`audio_speaker` -> `Audio speaker`."""
    words = str(key).replace("_", " ").replace(".", " ").strip()
    return words[:1].upper() + words[1:]


def _rows(value: Any, prefix: str = "") -> list[list[str]]:
    """One row per leaf of nested objects (`Audio speaker · volume`); lists read as lists."""
    if isinstance(value, dict):
        found: list[list[str]] = []
        for key, item in value.items():
            name = f"{prefix} · {label(key).lower()}" if prefix else label(key)
            found.extend(_rows(item, name) if isinstance(item, dict) and item else [[name, readable(item)]])
        return found
    return [[prefix or gettext("Value"), readable(value)]]


def _text(text: str) -> tuple[list[str], list[list[str]]]:
    """A text item: a JSON object or array becomes rows, a JSON yes/no a word, else the text."""
    stripped = text.strip()
    if stripped[:1] in "{[" or stripped in ("true", "false"):
        try:
            parsed = json.loads(stripped)
        except ValueError:
            return [text[:MAX_TEXT]], []
        if parsed is True:
            return [gettext("Done.")], []
        if parsed is False:
            return [gettext("The device answered no.")], []
        return [], _rows(parsed)
    return [text[:MAX_TEXT]], []


def readable_result(result: dict[str, Any]) -> Readable:
    """`result`: an MCP `CallToolResult` (`content`, `structuredContent`, `isError`)."""
    texts: list[str] = []
    rows: list[list[str]] = []
    content = result.get("content")
    for item in content if isinstance(content, list) else []:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "text":
            more_texts, more_rows = _text(str(item.get("text", "")))
            texts.extend(more_texts)
            rows.extend(more_rows)
        elif kind in ("image", "audio"):
            mime = {"type": item.get("mimeType", "?")}
            if kind == "image":
                texts.append(gettext("The device sent an image (%(type)s).") % mime)
            else:
                texts.append(gettext("The device sent a sound (%(type)s).") % mime)
        elif kind in ("resource", "resource_link"):
            uri = item.get("uri") or (item.get("resource") or {}).get("uri", "")
            texts.append(gettext("The device pointed to %(uri)s.") % {"uri": uri})
    structured = result.get("structuredContent")
    if isinstance(structured, dict) and structured:
        rows = _rows(structured)  # the device's own structure says it best
    error = bool(result.get("isError"))
    if not texts and not rows:
        if error:
            texts.append(gettext("The device reported an error without details."))
        else:
            texts.append(gettext("Done (no details)."))
    return {"error": error, "texts": texts, "rows": rows[:MAX_ROWS]}


def failed(message: str) -> Readable:
    """A call that did not reach or was refused before the device: the hub's own words."""
    return {"error": True, "texts": [message], "rows": []}
