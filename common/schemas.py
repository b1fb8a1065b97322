"""Shapes the REST API and the MCP tools share, and how a read's row shape serves both.

A read's row shape is declared once, as a TypedDict (typing_extensions', which pydantic reads
on Python 3.11) in its app's `schemas.py`: the selector returns it, django-ninja takes it as a
`response=`, and a tool takes `output_model(shape)` as its `output=`. The registry derives the
tool's outputSchema from that model, and the tool hands it the plain dict the selector gave,
sent as it is: no model is built per call. What clients see comes from the declaration, so it
carries no docstring (pydantic would publish it as the schema's description); descriptions
that clients should read go on the fields, `Annotated[..., Field(description=...)]`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, create_model
from typing_extensions import get_type_hints, is_typeddict


class NoArguments(BaseModel):
    # A tool's input when it takes none: any argument is refused.
    model_config = ConfigDict(extra="forbid")


def output_model(shape: Any) -> type[BaseModel]:
    """A pydantic model with the fields of the TypedDict `shape` (every one required, as the
    shape says), named as it is, for a tool's `output=`."""
    if not is_typeddict(shape) or shape.__optional_keys__:
        raise TypeError(f"{shape!r} is not a TypedDict whose every key is required")
    fields: dict[str, Any] = {
        name: (hint, ...) for name, hint in get_type_hints(shape, include_extras=True).items()
    }
    return create_model(shape.__name__, **fields)
