"""The names under which LLM agents see devices' tools, and the agent ids that would share them.

A device tool is offered as `<agent>__<tool>`, both parts in the characters function-calling
APIs accept (`aa:bb:cc:dd:ee:ff` becomes `aa_bb_cc_dd_ee_ff`). Two agent ids can read alike so
(`col:dev` and `col_dev`), or one can read as the other followed by `__` and part of a tool name
(`a__b` with tool `c`, `a` with tool `b.c`... `b__c`): their tools would be offered under the
same names, and the owner's settings for a name (enabled, *needs confirmation*) would follow
whichever device held it. So such ids are refused at registration (`selectors.clashing_agent`),
and where two exist anyway (registered before this rule, or in a race), the younger one's tools
are never offered (`younger_clashes`): no device takes over a name another holds or held.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator

MAX_NAME = 64  # what function-calling APIs accept


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_") or "x"


def exposed_name(agent_id: str, tool: str, *, hashed: bool = False) -> str:
    """The name under which LLM agents see a device tool: `<agent>__<tool>` in the
    characters function-calling APIs accept, e.g. `aa_bb_cc_dd_ee_ff__self_audio_speaker_set_volume`.
    Too long (or `hashed`, for the rare clash of two readable names of one device) it ends in a
    digest."""
    readable = f"{slug(agent_id)}__{slug(tool)}"
    if len(readable) <= MAX_NAME and not hashed:
        return readable
    digest = hashlib.sha256(f"{agent_id}\0{tool}".encode()).hexdigest()[:10]
    return f"{readable[:53]}_{digest}"


def _shorter(prefix: str) -> Iterator[str]:
    """The agent prefixes that this one could read as, followed by `__` and a tool's start: `a`
    and `a__b` for `a__b__c` (a slug never starts or ends with `_`)."""
    for separator in re.finditer(r"(?<=[^_])__(?=[^_])", prefix):
        yield prefix[: separator.start()]


def clash(agent_id: str, other: str) -> bool:
    """Whether the two agents' tools could be offered under the same names."""
    mine, theirs = slug(agent_id), slug(other)
    return mine == theirs or theirs in set(_shorter(mine)) or mine in set(_shorter(theirs))


def younger_clashes(agents: Iterable[tuple[int, str]]) -> dict[str, str]:
    """Of these agents (their creation order, their id), each that clashes with an older one:
    its id -> the oldest such agent's id."""
    rows = [(order, agent_id, slug(agent_id)) for order, agent_id in agents]
    exact: dict[str, tuple[int, str]] = {}  # prefix -> the oldest agent with it
    extending: dict[str, tuple[int, str]] = {}  # prefix -> the oldest agent whose prefix extends it
    for order, agent_id, prefix in rows:
        exact[prefix] = min(exact.get(prefix, (order, agent_id)), (order, agent_id))
        for shorter in _shorter(prefix):
            extending[shorter] = min(extending.get(shorter, (order, agent_id)), (order, agent_id))
    found: dict[str, str] = {}
    for order, agent_id, prefix in rows:
        candidates = [exact.get(prefix), extending.get(prefix), *(exact.get(s) for s in _shorter(prefix))]
        older = [c for c in candidates if c is not None and c[0] < order]
        if older:
            found[agent_id] = min(older)[1]
    return found
