"""The only code that changes ESP32 agents: registration, admission, presence, discovered
tools, approval, and the audit of their notifications and of tool calls made on them.

Like `devices.services`, each write is one transaction with its audit `Event`; changes
that alter which device tools exist are announced to every hub process after commit.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from audit.models import Event
from audit.services import record_event
from common.labels import LabelError, tidy_label
from common.storable import bounded_json, storable_json, storable_text
from common.write_batches import batched
from devices.agents import agent_channels, selectors
from devices.agents.models import Agent, AgentTool

logger = logging.getLogger(__name__)

DEVICE = Event.Interface.DEVICE
MAX_AUDIT_CHARS = 2000


def hash_device_token(token: str) -> str:
    # Tokens are 256-bit random: a fast hash is enough (see mcp_endpoint.auth.tokens).
    return hashlib.sha256(token.encode()).hexdigest()


DEVICE_TOKEN_PREFIX = "hhd_"


def new_device_token() -> str:
    """A device token. Its prefix names it (to a log reader or a secret scanner) and keeps it
    from starting with "-", which a command line (`simulate_device AGENT_ID TOKEN`) would take
    for an option: one bare token in 64 did."""
    return DEVICE_TOKEN_PREFIX + secrets.token_urlsafe(32)


class AgentRefused(ValueError):
    """A new agent the hub will not record; the text says why."""


class AgentIdClash(AgentRefused):
    """A new agent id whose tools would be offered under an existing agent's names; the text
    says which agent, for whoever registers it."""

    def __init__(self, agent_id: str, other: str) -> None:
        super().__init__(
            f"Agent id '{agent_id}' is refused: its tools would be offered under the same names as "
            f"those of agent '{other}' (the two ids read alike as tool names); use another id, or "
            f"remove agent '{other}' first."
        )
        self.other = other


def refuse_clashing(agent_id: str) -> None:
    """Raise `AgentIdClash` when this id, not yet an agent, would share an agent's tool names."""
    if Agent.objects.filter(agent_id=agent_id).exists():
        return
    other = selectors.clashing_agent(agent_id)
    if other is not None:
        raise AgentIdClash(agent_id, other)


def refuse_past_pending_bound() -> None:
    """Raise `AgentRefused` when DEVICES_PENDING_MAX agents already wait for approval: whoever
    may announce or present themselves must not fill the database and the Devices page."""
    bound = settings.DEVICES_PENDING_MAX
    if bound and Agent.objects.filter(approved=False).count() >= bound:
        raise AgentRefused(
            f"{bound} agents already wait for the owner's approval (DEVICES_PENDING_MAX): approve "
            "or delete them first"
        )


def register_agent(
    agent_id: str,
    *,
    transport: str,
    name: str = "",
    actor: str,
    interface: str,
    issue_token: bool = True,
    connects_on_demand: bool | None = None,
) -> tuple[Agent, str | None]:
    """Create the agent, or update it if known. WebSocket agents get a fresh device token
    (returned once; only its hash is kept), which replaces any earlier one; with
    `issue_token=False` none yet (any earlier one stops working): the device is handed one
    later, through `issue_device_token`. `connects_on_demand`: set it, when given. A new id
    whose tools would take another agent's names raises `AgentIdClash`."""
    token = new_device_token() if transport == Agent.Transport.WS and issue_token else None
    with transaction.atomic():
        refuse_clashing(agent_id)
        agent, created = Agent.objects.select_for_update().get_or_create(
            agent_id=agent_id, defaults={"transport": transport, "name": name}
        )
        agent.transport = transport
        if name:
            agent.name = name
        if connects_on_demand is not None:
            agent.connects_on_demand = connects_on_demand
        agent.approved = True
        agent.token_hash = hash_device_token(token) if token else ""
        agent.save()
        record_event(
            actor=actor,
            interface=interface,
            action="agent.register",
            target=f"agent:{agent_id}",
            after={
                "transport": transport,
                "created": created,
                "token_issued": token is not None,
                "connects_on_demand": agent.connects_on_demand,
            },
        )
    return agent, token


def issue_device_token(agent_id: str, *, actor: str, interface: str) -> str | None:
    """A fresh device token for a WebSocket agent (returned once; only its hash is kept),
    replacing any earlier one; None when there is no such agent."""
    token = new_device_token()
    with transaction.atomic():
        issued = Agent.objects.filter(agent_id=agent_id, transport=Agent.Transport.WS).update(
            token_hash=hash_device_token(token)
        )
        if not issued:
            return None
        record_event(
            actor=actor,
            interface=interface,
            action="agent.token",
            target=f"agent:{agent_id}",
            after={"token_issued": True},
        )
    return token


def revoke_device_token(agent_id: str, *, actor: str, interface: str) -> bool:
    """The agent's device token stops working: the device is refused from now on (so it no
    longer connects on demand either: it is plainly offline), and its live connection, if any
    (in whichever process), is recorded offline and hung up. False when there is no such agent."""
    with transaction.atomic():
        agent = Agent.objects.select_for_update().filter(agent_id=agent_id).first()
        if agent is None:
            return False
        before = {"token": bool(agent.token_hash), "connects_on_demand": agent.connects_on_demand}
        session_id = agent.session_id
        agent.token_hash = ""
        agent.connects_on_demand = False
        agent.save(update_fields=["token_hash", "connects_on_demand"])
        record_event(
            actor=actor,
            interface=interface,
            action="agent.revoke",
            target=f"agent:{agent_id}",
            before=before,
            after={"token": False, "connects_on_demand": False},
            broadcast={"kind": "agent", "agent_id": agent_id},
        )
        if agent.online and session_id:
            agent_disconnected(agent_id, session_id)
            # Its link, which the database no longer names, steps aside and hangs up.
            agent_channels.tell_agent_on_commit(agent_id, agent_channels.REPLACED)
    return True


def admit_device(agent_id: str, token: str | None, *, accept_unknown: bool) -> Agent | None:
    """The agent a device may connect as, or None to refuse it.

    A known device needs its token. An unknown one is refused, unless `accept_unknown`,
    in which case it is recorded as pending approval with the token it presented (so the
    same token works once an admin approves it).
    """
    if not agent_id or not token or len(agent_id) > 64 or len(token) > 200:
        return None
    presented = hash_device_token(token)
    agent = Agent.objects.filter(agent_id=agent_id, transport=Agent.Transport.WS).first()
    if agent is not None:
        return agent if agent.token_hash and hmac.compare_digest(agent.token_hash, presented) else None
    if not accept_unknown or Agent.objects.filter(agent_id=agent_id).exists():
        return None
    with transaction.atomic():
        try:
            refuse_clashing(agent_id)
            refuse_past_pending_bound()
        except AgentRefused as refusal:
            logger.warning("device %s refused: %s", agent_id, refusal)
            return None
        agent = Agent.objects.create(agent_id=agent_id, approved=False, token_hash=presented)
        record_event(
            actor=agent_id,
            interface=DEVICE,
            action="agent.pending",
            target=f"agent:{agent_id}",
            after={"approved": False},
            broadcast={"kind": "agent", "agent_id": agent_id},
        )
    return agent


def agent_connected(agent_id: str, session_id: str, details: dict[str, Any]) -> None:
    """The device said hello: it is online under this session."""
    with transaction.atomic():
        Agent.objects.filter(agent_id=agent_id).update(
            online=True, session_id=session_id, last_seen=timezone.now()
        )
        record_event(
            actor=agent_id,
            interface=DEVICE,
            action="agent.connect",
            target=f"agent:{agent_id}",
            after={"session_id": session_id, **details},
            broadcast={"kind": "agent", "agent_id": agent_id, "online": True},
        )


def mqtt_agent_announced(agent_id: str, session_id: str, details: dict[str, Any]) -> Agent | None:
    """An MQTT agent announced itself on `mcp/discovery`: online under a fresh session; a new
    one is recorded pending the owner's approval (anyone the broker lets publish may announce,
    and its tools' descriptions would reach LLMs), as an unknown WebSocket device is. None when
    the id belongs to a WebSocket agent; `AgentRefused` for a new id whose tools would take
    another agent's names, or past DEVICES_PENDING_MAX agents pending. Only a new agent or a
    return from offline is audited, not every repeated announcement."""
    with transaction.atomic():
        if not Agent.objects.filter(agent_id=agent_id).exists():
            refuse_clashing(agent_id)
            refuse_past_pending_bound()
        agent, created = Agent.objects.select_for_update().get_or_create(
            agent_id=agent_id, defaults={"transport": Agent.Transport.MQTT, "approved": False}
        )
        if agent.transport != Agent.Transport.MQTT:
            return None
        returning = created or not agent.online
        agent.online = True
        agent.session_id = session_id
        agent.last_seen = timezone.now()
        agent.capabilities = {"mqtt": details}
        agent.save(update_fields=["online", "session_id", "last_seen", "capabilities"])
        if returning:
            record_event(
                actor=agent_id,
                interface=DEVICE,
                action="agent.pending" if created else "agent.connect",
                target=f"agent:{agent_id}",
                after={"session_id": session_id, "approved": agent.approved, **details},
                broadcast={"kind": "agent", "agent_id": agent_id, "online": True},
            )
    return agent


def mqtt_sessions_ended(owner: str) -> int:
    """A worker (re)starting: the agents its previous run owned lost their link with it and
    are offline until they announce themselves again."""
    sessions = Agent.objects.filter(
        transport=Agent.Transport.MQTT, online=True, session_id__startswith=f"{owner}:"
    ).values_list("agent_id", "session_id")
    ended = list(sessions)
    for agent_id, session_id in ended:
        agent_disconnected(agent_id, session_id)
    return len(ended)


def heard_from(device_ids: Iterable[str]) -> None:
    """The devices of these ids were heard from (a reading or a heartbeat): the agents among
    them were last seen now, online or not."""
    ids = list(device_ids)
    if ids:
        Agent.objects.filter(agent_id__in=ids).update(last_seen=timezone.now())


def touch_agents(agent_ids: Iterable[str]) -> None:
    """These agents' connections are alive in the calling process (see `end_silent_sessions`)."""
    ids = list(agent_ids)
    if ids:
        Agent.objects.filter(agent_id__in=ids, online=True).update(last_seen=timezone.now())


def end_silent_sessions(silent_for: float) -> list[str]:
    """WebSocket agents still marked online whose process stopped vouching for them (every hub
    process touches its own devices' `last_seen` regularly): the process died without saying
    goodbye. They go offline like a disconnect; returns their ids."""
    cutoff = timezone.now() - timedelta(seconds=silent_for)
    stale = list(
        Agent.objects.filter(transport=Agent.Transport.WS, online=True, last_seen__lt=cutoff).values_list(
            "agent_id", "session_id"
        )
    )
    for agent_id, session_id in stale:
        agent_disconnected(agent_id, session_id)
    return [agent_id for agent_id, _ in stale]


def agent_discovery_failed(agent_id: str, session_id: str, reason: str) -> None:
    """The agent did not list its tools: say so in the audit trail (its old tools stay)."""
    record_event(
        actor=agent_id,
        interface=DEVICE,
        action="agent.discovery_failed",
        target=f"agent:{agent_id}",
        after={"session_id": session_id, "reason": storable_text(reason[:MAX_AUDIT_CHARS])},
        broadcast={"kind": "agent", "agent_id": agent_id},
    )


TOOL_HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def tool_hints(annotations: Any) -> dict[str, bool]:
    """The boolean hints of a device tool's `annotations` (anything else a device sends there
    is dropped)."""
    if not isinstance(annotations, dict):
        return {}
    return {hint: annotations[hint] for hint in TOOL_HINTS if isinstance(annotations.get(hint), bool)}


def agent_discovered(
    agent_id: str,
    session_id: str,
    *,
    server_info: dict[str, Any],
    capabilities: dict[str, Any],
    tools: list[dict[str, Any]],
) -> None:
    """Replace the agent's tools with those it just listed, in one transaction. Nothing
    changes if the agent has meanwhile reconnected under another session."""
    with transaction.atomic():
        agent = Agent.objects.select_for_update().filter(agent_id=agent_id, session_id=session_id).first()
        if agent is None:
            return
        agent.server_info = storable_json(server_info)
        agent.capabilities = storable_json(capabilities)
        agent.save(update_fields=["server_info", "capabilities"])
        by_name = {t["name"]: t for t in tools}  # a repeated name keeps its last definition
        agent.tools.exclude(name__in=by_name).delete()
        known = {t.name: t for t in agent.tools.all()}
        new: list[AgentTool] = []
        changed: list[AgentTool] = []
        for name, spec in by_name.items():
            schema = spec.get("inputSchema")
            description = spec.get("description")
            row = known.get(name) or AgentTool(agent=agent, name=name)
            row.description = storable_text(description) if isinstance(description, str) else ""
            row.input_schema = storable_json(schema) if isinstance(schema, dict) else {}
            row.annotations = tool_hints(spec.get("annotations"))
            row.available = True
            (changed if row.pk else new).append(row)
        AgentTool.objects.bulk_create(new)
        AgentTool.objects.bulk_update(changed, ["description", "input_schema", "annotations", "available"])
        record_event(
            actor=agent_id,
            interface=DEVICE,
            action="agent.tools",
            target=f"agent:{agent_id}",
            after={"server_info": server_info, "tools": sorted(by_name)},
            broadcast={"kind": "agent", "agent_id": agent_id, "tools": len(by_name)},
        )
        agent_channels.announce_agent_change_on_commit(agent_id)


def agent_disconnected(agent_id: str, session_id: str) -> None:
    """The connection of `session_id` closed: offline, its tools kept but unavailable."""
    with transaction.atomic():
        gone = Agent.objects.filter(agent_id=agent_id, session_id=session_id).update(
            online=False, session_id="", last_seen=timezone.now()
        )
        if not gone:
            return  # a newer connection of the same device took over
        AgentTool.objects.filter(agent__agent_id=agent_id).update(available=False)
        record_event(
            actor=agent_id,
            interface=DEVICE,
            action="agent.disconnect",
            target=f"agent:{agent_id}",
            after={"session_id": session_id},
            broadcast={"kind": "agent", "agent_id": agent_id, "online": False},
        )
        agent_channels.announce_agent_change_on_commit(agent_id)


def record_agent_notification(agent_id: str, method: str, params: dict[str, Any]) -> None:
    record_event(
        actor=agent_id,
        interface=DEVICE,
        action="agent.notification",
        target=f"agent:{agent_id}",
        after={"method": method, "params": bounded_json(params, MAX_AUDIT_CHARS)},
        broadcast={"kind": "agent", "agent_id": agent_id, "method": method},
    )


def approve_agents(agent_ids: Iterable[str], *, actor: str, interface: str) -> int:
    """Approve pending agents; a connected one is told to start its discovery."""
    approved = 0
    with transaction.atomic():
        for agent in Agent.objects.select_for_update().filter(agent_id__in=list(agent_ids), approved=False):
            agent.approved = True
            agent.save(update_fields=["approved"])
            record_event(
                actor=actor,
                interface=interface,
                action="agent.approve",
                target=f"agent:{agent.agent_id}",
                before={"approved": False},
                after={"approved": True},
                broadcast={"kind": "agent", "agent_id": agent.agent_id, "approved": True},
            )
            agent_channels.tell_agent_on_commit(agent.agent_id, agent_channels.APPROVED)
            approved += 1
    return approved


def remove_agent(agent_id: str, *, actor: str, interface: str) -> bool:
    """Forget an agent that is not connected: its row, its tools and credentials go (a device
    that comes back is a stranger, pending like any other). False when there is no such agent
    or it is online (it would only be hung up on, mid-use)."""
    with transaction.atomic():
        agent = Agent.objects.select_for_update().filter(agent_id=agent_id, online=False).first()
        if agent is None:
            return False
        before = {
            "name": agent.name,
            "transport": agent.transport,
            "approved": agent.approved,
            "last_seen": agent.last_seen.isoformat() if agent.last_seen else None,
            "tools": sorted(agent.tools.values_list("name", flat=True)),
        }
        agent.delete()
        record_event(
            actor=actor,
            interface=interface,
            action="agent.remove",
            target=f"agent:{agent_id}",
            before=before,
            broadcast={"kind": "agent", "agent_id": agent_id, "removed": True},
        )
        agent_channels.announce_agent_change_on_commit(agent_id)
    return True


def set_agent_label(agent_id: str, label: str, *, actor: str, interface: str) -> str:
    """Name a device as the household calls it (blank: back to its default name, see
    `selectors.display_name`). The label is `Agent.name`, which only owners' doors write
    (registration, pairing, this): a device's own announcements never touch it. One transaction
    with its audit event; the stripped label is returned."""
    label = tidy_label(label)
    with transaction.atomic():
        agent = Agent.objects.select_for_update().filter(agent_id=agent_id).first()
        if agent is None:
            raise LabelError(gettext("agent_id: no device %(id)s.") % {"id": agent_id})
        if agent.name != label:
            before = agent.name
            agent.name = label
            agent.save(update_fields=["name"])
            record_event(
                actor=actor,
                interface=interface,
                action="agent.label",
                target=f"agent:{agent_id}",
                before={"name": before},
                after={"name": label},
                broadcast={"kind": "agent", "agent_id": agent_id, "name": label},
            )
            agent_channels.announce_agent_change_on_commit(agent_id)
    return label


def record_agent_call(
    *, actor: str, interface: str, agent_id: str, tool: str, arguments: Any, outcome: dict[str, Any]
) -> None:
    """Audit one tool call made on a device through the gateway."""
    record_event(
        actor=actor,
        interface=interface,
        action="agent.call",
        target=f"agent:{agent_id}",
        before={"tool": storable_text(tool), "arguments": bounded_json(arguments, MAX_AUDIT_CHARS)},
        after=outcome,
    )


# Their async forms, for the device links and the gateway (code of the hub's own event
# loops): writes share the database thread's hops (`common.write_batches`; see `common.tasks`).
aadmit_device = batched(admit_device)
aagent_connected = batched(agent_connected)
aagent_discovered = batched(agent_discovered)
aagent_disconnected = batched(agent_disconnected)
amqtt_agent_announced = batched(mqtt_agent_announced)
aagent_discovery_failed = batched(agent_discovery_failed)
amqtt_sessions_ended = batched(mqtt_sessions_ended)
atouch_agents = batched(touch_agents)
aend_silent_sessions = batched(end_silent_sessions)
arecord_agent_notification = batched(record_agent_notification)
arecord_agent_call = batched(record_agent_call)
