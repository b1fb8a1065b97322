"""A form for an agent's tool, generated from its JSON Schema (`inputSchema`), and the
arguments read back from what was posted."""

from __future__ import annotations

import json
from typing import Any

from django.utils.translation import gettext

from mcp_endpoint.engine import jsonrpc

SIMPLE = {"string", "integer", "number", "boolean"}


def fields_for(schema: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One entry per property: name, label, widget (text, number, checkbox, select, json), ..."""
    schema = schema if isinstance(schema, dict) else {}
    props = schema.get("properties")
    if not isinstance(props, dict):
        props = {}
    listed = schema.get("required")
    required = {r for r in listed if isinstance(r, str)} if isinstance(listed, list) else set()
    fields = []
    for name, prop in props.items():
        prop = prop if isinstance(prop, dict) else {}
        kind = prop.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "string")
        field: dict[str, Any] = {
            "name": str(name),
            "label": str(prop.get("title") or name).replace("_", " "),
            "description": str(prop.get("description") or ""),
            "type": kind or "string",
            "required": name in required,
            "default": prop.get("default"),
        }
        if isinstance(prop.get("enum"), list):
            field["widget"] = "select"
            field["choices"] = [json.dumps(v) if not isinstance(v, str) else v for v in prop["enum"]]
        elif kind == "boolean":
            field["widget"] = "checkbox"
        elif kind in ("integer", "number"):
            field["widget"] = "number"
            field["step"] = "1" if kind == "integer" else "any"
            field["min"] = prop.get("minimum")
            field["max"] = prop.get("maximum")
        elif kind == "string" or kind is None:
            field["widget"] = "text"
            field["maxlength"] = prop.get("maxLength")
        else:
            field["widget"] = "json"
        fields.append(field)
    return fields


def arguments_from(schema: dict[str, Any] | None, data: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """(arguments, errors by field name) from posted form data (field `arg-<name>`)."""
    arguments: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for field in fields_for(schema):
        name, kind = field["name"], field["type"]
        key = f"arg-{name}"
        if field.get("widget") == "checkbox":
            arguments[name] = data.get(key) in ("on", "true", "1")
            continue
        raw = (data.get(key) or "").strip()
        if raw == "":
            if field["required"]:
                errors[name] = gettext("This field is required.")
            continue
        try:
            if field.get("widget") == "select" and kind != "string":
                arguments[name] = jsonrpc.loads(raw)
            elif kind == "integer":
                arguments[name] = int(raw)
            elif kind == "number":
                arguments[name] = float(raw)
            elif kind in SIMPLE or kind is None:
                arguments[name] = raw
            else:
                arguments[name] = jsonrpc.loads(raw)
        except ValueError:
            if kind == "integer":
                errors[name] = gettext("Enter a whole number.")
            elif kind == "number":
                errors[name] = gettext("Enter a number.")
            else:
                errors[name] = gettext("Enter valid JSON.")
    return arguments, errors
