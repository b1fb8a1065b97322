"""The Activity page's reads: the audit trail in sentences (`dashboard.sentences`), searched by
the names a household uses ("Salón" finds `light:salon`)."""

from __future__ import annotations

from typing import Any

from django.core.paginator import Page, Paginator
from django.urls import reverse

from audit import selectors as audit_reads
from automations import selectors as rooms_reads
from dashboard import sentences
from devices.agents.names import slug
from devices.home import selectors as home_reads

EVENTS_PER_PAGE = 25


def light_labels() -> dict[str, str]:
    return {light["name"]: light["label"] for light in home_reads.lights() if light["label"]}


def device_labels() -> dict[str, str]:
    """Each device's name (`automations.selectors.device_names`) under its agent id and under its
    tools' prefix, as `dashboard.sentences` looks them up."""
    names = rooms_reads.device_names()
    return {**{slug(agent_id): name for agent_id, name in names.items()}, **names}


def named_targets() -> list[tuple[str, str]]:
    """(target, a name it goes by) for what the home names: a light by its label, slug and room,
    a person, a scene, a device by its name."""
    named: list[tuple[str, str]] = []
    for light in home_reads.lights():
        target = f"light:{light['name']}"
        named += [(target, light["name"]), (target, light["label"]), (target, light["room"])]
    named += [(f"person:{person['name']}", person["name"]) for person in home_reads.people()]
    named += [(f"scene:{scene['name']}", scene["name"]) for scene in rooms_reads.scenes()]
    named += [(f"agent:{agent_id}", name) for agent_id, name in rooms_reads.device_names().items()]
    return named


def _link(event: Any) -> str:
    """Where a row leads: a batch's summary to the batch's page."""
    kind, _sep, key = (event.target or "").partition(":")
    if event.action == "fel.batch" and kind == "batch" and key.isdigit():
        return reverse("dashboard:batch", args=[int(key)])
    return ""


def page(filters: dict[str, str], number: str | None) -> tuple[Page, list[dict[str, Any]]]:
    """One page of events matching `filters`, newest first, and its rows (each event with its
    `sentence` and `link`);
    "What" (`target`) matches a target's text or any name it goes by, regardless of case and
    accents."""
    query = filters["target"]
    targets = sentences.targets_named(query, named_targets()) if query else []
    found = audit_reads.events(
        interface=filters["interface"],
        action=filters["action"],
        actor=filters["actor"],
        target=sentences.fold(query),
        targets=targets,
        batch_files=False,
    )
    shown = Paginator(found, EVENTS_PER_PAGE).get_page(number)
    labels, devices = light_labels(), device_labels()
    rows = [
        {"e": event, "sentence": sentences.event_sentence(event, labels, devices), "link": _link(event)}
        for event in shown
    ]
    return shown, rows
