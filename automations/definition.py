"""An automation's definition: the JSON shape docs/DESIGN.md fixes (triggers, conditions,
actions, mode), as typed objects. `parse` checks the shape only (types, known kinds, bounds)
and raises `DefinitionError` naming each bad field (in the active language: pydantic's words
for the common mistakes are said again, `_said`); whether the lights, people, zones, agents
and tools it names exist is `automations.validation`'s question.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.utils.translation import gettext, gettext_noop
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, model_validator
from pydantic_core import ErrorDetails

from automations.errors import DefinitionError

NAME_MAX = 100
TRIGGERS_MAX = 20
CONDITIONS_MAX = 20
ACTIONS_MAX = 50
DELAY_MAX_SECONDS = 3600  # a longer wait is a second automation on a schedule
FOR_SECONDS_MAX = 86400
OFFSET_MINUTES_MAX = 720
QUEUE_MAX = 10
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")

Name = Annotated[str, Field(min_length=1, max_length=NAME_MAX)]
Clock = Annotated[str, Field(pattern=r"^([01]\d|2[0-3]):[0-5]\d$", description="HH:MM, 24 h")]


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class _Someone(_Shape):
    """A presence trigger or condition: one person by name, or everyone/anyone."""

    person: Name | None = None
    who: Literal["everyone", "anyone"] | None = None

    @model_validator(mode="after")
    def _one_of(self) -> _Someone:
        if (self.person is None) == (self.who is None):
            raise ValueError(gettext("give either 'person' (a name) or 'who' ('everyone' or 'anyone')"))
        return self


class _Threshold(_Shape):
    zone: Name
    channel: Name
    above: float | None = None
    below: float | None = None

    @model_validator(mode="after")
    def _one_bound(self) -> _Threshold:
        if self.above is None and self.below is None:
            raise ValueError(gettext("give 'above' or 'below' (or both, for a band)"))
        if self.above is not None and self.below is not None and self.above >= self.below:
            raise ValueError(gettext("'above' must be lower than 'below' when both are given"))
        return self

    def within(self, value: float) -> bool:
        """Whether `value` is past the threshold (above it, below it, or inside the band)."""
        return (self.above is None or value > self.above) and (self.below is None or value < self.below)


# Triggers: a change that starts a run.


class LightTrigger(_Shape):
    type: Literal["light"]
    name: Name
    to: Literal["on", "off"]


class PresenceTrigger(_Someone):
    type: Literal["presence"]
    to: Literal["home", "away"]


class AlarmTrigger(_Shape):
    type: Literal["alarm"]
    to: Literal["armed", "disarmed"]


class SensorTrigger(_Threshold):
    """Fires when the value crosses into the threshold (and, with `for_seconds`, has stayed
    there that long); it fires again only after the value has left it."""

    type: Literal["sensor"]
    for_seconds: int = Field(default=0, ge=0, le=FOR_SECONDS_MAX)


class TimeTrigger(_Shape):
    type: Literal["time"]
    cron: str = Field(min_length=9, max_length=100, description="five fields, the home's time zone")


class SunTrigger(_Shape):
    type: Literal["sun"]
    event: Literal["sunrise", "sunset"]
    offset_minutes: int = Field(default=0, ge=-OFFSET_MINUTES_MAX, le=OFFSET_MINUTES_MAX)


class AgentTrigger(_Shape):
    type: Literal["agent"]
    agent: Name
    to: Literal["online", "offline"]


Trigger = Annotated[
    LightTrigger | PresenceTrigger | AlarmTrigger | SensorTrigger | TimeTrigger | SunTrigger | AgentTrigger,
    Field(discriminator="type"),
]

# Conditions: what must hold when a trigger fires.


class LightCondition(_Shape):
    model_config = ConfigDict(populate_by_name=True)
    type: Literal["light"]
    name: Name
    is_: Literal["on", "off"] = Field(alias="is")


class PresenceCondition(_Someone):
    model_config = ConfigDict(populate_by_name=True)
    type: Literal["presence"]
    is_: Literal["home", "away"] = Field(alias="is")


class AlarmCondition(_Shape):
    type: Literal["alarm"]
    armed: bool


class SensorCondition(_Threshold):
    type: Literal["sensor"]


class AgentCondition(_Shape):
    model_config = ConfigDict(populate_by_name=True)
    type: Literal["agent"]
    agent: Name
    is_: Literal["online", "offline"] = Field(alias="is")


class SunCondition(_Shape):
    model_config = ConfigDict(populate_by_name=True)
    type: Literal["sun"]
    is_: Literal["up", "down"] = Field(alias="is")


class TimeCondition(_Shape):
    """A time window in the home's time zone (it may cross midnight: after 22:00 before 06:00)
    and/or weekdays."""

    type: Literal["time"]
    after: Clock | None = None
    before: Clock | None = None
    weekdays: list[Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]] | None = Field(
        default=None, min_length=1, max_length=7
    )

    @model_validator(mode="after")
    def _something(self) -> TimeCondition:
        if self.after is None and self.before is None and self.weekdays is None:
            raise ValueError(gettext("give 'after', 'before' or 'weekdays'"))
        return self


Condition = Annotated[
    LightCondition
    | PresenceCondition
    | AlarmCondition
    | SensorCondition
    | AgentCondition
    | SunCondition
    | TimeCondition,
    Field(discriminator="type"),
]

# Actions: what a run does, in order.


class ToolAction(_Shape):
    tool: str = Field(min_length=1, max_length=200)
    arguments: dict[str, Any] = Field(default_factory=dict)


class SceneAction(_Shape):
    scene: Name


class DelayAction(_Shape):
    delay_seconds: float = Field(gt=0, le=DELAY_MAX_SECONDS)


class NotifyAction(_Shape):
    notify: str = Field(min_length=1, max_length=1000)
    title: str | None = Field(default=None, max_length=200)
    level: Literal["info", "warning", "alarm"] = "info"


ACTION_KINDS = ("tool", "scene", "delay_seconds", "notify")


def _action_kind(value: Any) -> str | None:
    """Which kind of action a JSON object is, by its one key among ACTION_KINDS."""
    if isinstance(value, BaseModel):
        value = value.model_dump()
    if not isinstance(value, dict):
        return None
    return next((kind for kind in ACTION_KINDS if kind in value), None)


Action = Annotated[
    Annotated[ToolAction, Tag("tool")]
    | Annotated[SceneAction, Tag("scene")]
    | Annotated[DelayAction, Tag("delay_seconds")]
    | Annotated[NotifyAction, Tag("notify")],
    Discriminator(
        _action_kind,
        custom_error_type="action_kind",
        custom_error_message="an action is an object with 'tool', 'scene', 'delay_seconds' or 'notify'",
    ),
]


class Definition(_Shape):
    name: Name
    description: str = Field(default="", max_length=2000)
    mode: Literal["single", "restart", "queued"] = Field(
        default="single",
        description="while a run is going: single ignores a new trigger, restart stops the run and "
        "starts again, queued runs it afterwards (at most max_queued waiting)",
    )
    max_queued: int = Field(default=5, ge=1, le=QUEUE_MAX)
    on_error: Literal["stop", "continue"] = Field(
        default="stop", description="after a failed action: stop the run, or go on with the next"
    )
    triggers: list[Trigger] = Field(min_length=1, max_length=TRIGGERS_MAX)
    conditions: list[Condition] = Field(default_factory=list, max_length=CONDITIONS_MAX)
    actions: list[Action] = Field(min_length=1, max_length=ACTIONS_MAX)

    def as_json(self) -> dict[str, Any]:
        """The definition as clients write it (aliases such as `is`, no defaults left out)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


_TAGS = {"light", "presence", "alarm", "sensor", "time", "sun", "agent", *ACTION_KINDS}


def _field(loc: tuple[int | str, ...]) -> str:
    """`triggers[0].to` from pydantic's ('triggers', 0, 'light', 'to'): the union's tag, which
    pydantic puts in the path, is not a field the author wrote."""
    out = ""
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        elif i > 0 and isinstance(loc[i - 1], int) and part in _TAGS:
            continue
        else:
            out += ("." if out else "") + ("is" if part == "is_" else part)
    return out or "definition"


def parse(data: Any) -> Definition:
    """The definition in `data` (a JSON object); DefinitionError naming every bad field."""
    if not isinstance(data, dict):
        raise DefinitionError(["definition: " + gettext("must be a JSON object")])
    try:
        return Definition.model_validate(data)
    except ValidationError as exc:
        raise DefinitionError([f"{_field(e['loc'])}: {_said(e)}" for e in exc.errors()]) from None


# pydantic's error types an author meets most, said again: (words, the context key they name).
_SAID = {
    "missing": (gettext_noop("required"), None),
    "extra_forbidden": (gettext_noop("not a field here"), None),
    "action_kind": (
        gettext_noop("an action is an object with 'tool', 'scene', 'delay_seconds' or 'notify'"),
        None,
    ),
    "union_tag_invalid": (gettext_noop("unknown type '%(n)s'"), "tag"),
    "string_too_short": (gettext_noop("too short (at least %(n)s)"), "min_length"),
    "too_short": (gettext_noop("too short (at least %(n)s)"), "min_length"),
    "string_too_long": (gettext_noop("too long (at most %(n)s)"), "max_length"),
    "too_long": (gettext_noop("too long (at most %(n)s)"), "max_length"),
    "greater_than_equal": (gettext_noop("must be at least %(n)s"), "ge"),
    "greater_than": (gettext_noop("must be more than %(n)s"), "gt"),
    "less_than_equal": (gettext_noop("must be at most %(n)s"), "le"),
    "less_than": (gettext_noop("must be less than %(n)s"), "lt"),
    "int_type": (gettext_noop("must be a whole number"), None),
    "float_type": (gettext_noop("must be a number"), None),
    "string_type": (gettext_noop("must be a text"), None),
    "bool_type": (gettext_noop("must be true or false"), None),
    "dict_type": (gettext_noop("must be a JSON object"), None),
    "list_type": (gettext_noop("must be a list"), None),
}


def _said(error: ErrorDetails) -> str:
    """pydantic's message for `error`; in another language than English, the catalog's words
    for the mistakes an author makes most (a missing or unknown field, a wrong choice, a
    bound, a type). English, and any other mistake, read as pydantic says them."""
    kind, ctx = error["type"], error.get("ctx", {})
    values: dict[str, Any]
    if kind == "value_error":  # a validator's own words, translated when raised
        return error["msg"].removeprefix("Value error, ")
    if kind == "literal_error":
        words, values = gettext_noop("must be %(expected)s"), {"expected": str(ctx.get("expected", ""))}
        values["expected"] = values["expected"].replace("' or '", "' " + gettext("or") + " '")
    elif kind in _SAID:
        words, named = _SAID[kind]
        values = {"n": ctx.get(named)} if named else {}
    else:
        return error["msg"]
    said = gettext(words)
    if said == words:  # no translation: pydantic's own English
        return error["msg"]
    return said % values if values else said
