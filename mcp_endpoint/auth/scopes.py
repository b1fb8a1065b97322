"""Scopes: what an access token may do. The engine knows two levels that every app's tools
fall under, `read` (tools, resources and prompts that change nothing) and `control` (tools
that change the state); an app whose tools need a grant of their own declares its scope here,
with a description, before its tools use it (at the top of its `mcp_tools.py`):

    declare_scope("fel", "FEL invoices: validate, render and batch them")

Tokens (`create_mcp_token --scopes`, the admin), `mcp_stdio --scopes`, tools and the REST API
accept the declared scopes only; they are listed in the order they were declared.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scope:
    name: str
    description: str


class Scopes:
    def __init__(self) -> None:
        self._declared: dict[str, Scope] = {}

    def declare(self, name: str, description: str) -> Scope:
        """Declare `name`; declaring it again with the same description is harmless."""
        scope = Scope(name, description)
        known = self._declared.setdefault(name, scope)
        if known != scope:
            raise ValueError(f"scope {name!r} is already declared as {known.description!r}")
        return scope

    def names(self) -> tuple[str, ...]:
        return tuple(self._declared)

    def all(self) -> list[Scope]:
        return list(self._declared.values())

    def __contains__(self, name: object) -> bool:
        return name in self._declared

    def parse(self, text: str | list[str]) -> list[str]:
        """'read,control' -> ['read', 'control'], in declaration order; an undeclared scope is
        a ValueError."""
        items = text.split(",") if isinstance(text, str) else text
        wanted = {s.strip() for s in items if s.strip()}
        unknown = sorted(wanted - set(self._declared))
        if unknown:
            raise ValueError(f"unknown scope(s): {', '.join(unknown)} (known: {', '.join(self._declared)})")
        return [name for name in self._declared if name in wanted]


scopes = Scopes()
declare_scope = scopes.declare

declare_scope("read", "read the state: tools that change nothing, resources and prompts")
declare_scope("control", "change the state: tools that switch, set or arm things")
