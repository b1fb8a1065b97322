"""How a call to a device's tool ended, as types: the device's answer (`CallResult`), or why
there is none (a `CallFailed`, one subclass per reason).

A device link raises them, the gateway passes them on (across the channel layer in their
wire form, rebuilt on the caller's side), and each door maps them by type, never by their
words: MCP makes every failure a tool error (`isError`) with its message, written for a
model; REST and the dashboard answer the HTTP status of its type (`devices.agents.calls`).
A refusal of scope happens before any of this, at each door (the MCP pipeline, the REST
router's `need`).

Wire form, in an `agent.reply` message: `{"result": <MCP result>}` or
`{"failure": <kind>, "message": <text>}`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar


@dataclass(frozen=True, slots=True)
class CallResult:
    """What the device answered; `is_error` is the device's own word that its tool failed."""

    content: list[Any]
    structured: dict[str, Any] | None = None
    is_error: bool = False

    @classmethod
    def from_mcp(cls, result: dict[str, Any]) -> CallResult:
        """From a device's `tools/call` result, whatever its firmware left out."""
        content = result.get("content")
        structured = result.get("structuredContent")
        return cls(
            content=content if isinstance(content, list) else [],
            structured=structured if isinstance(structured, dict) else None,
            is_error=bool(result.get("isError", False)),
        )

    def as_mcp(self) -> dict[str, Any]:
        result: dict[str, Any] = {"content": self.content}
        if self.structured is not None:
            result["structuredContent"] = self.structured
        result["isError"] = self.is_error
        return result


class CallFailed(Exception):
    """A call that got no answer from the device; the message is meant for people and models.
    Raised as such only for what went wrong in the hub itself."""

    kind: ClassVar[str] = "failed"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @classmethod
    def unexpected(cls, agent_id: str, tool: str, error: BaseException) -> CallFailed:
        return cls(f"Agent '{agent_id}' could not run tool '{tool}': {error or type(error).__name__}")


class UnknownAgent(CallFailed):
    kind = "unknown_agent"

    @classmethod
    def named(cls, agent_id: str) -> UnknownAgent:
        return cls(f"Unknown agent '{agent_id}'. Call list_agents to see the agents and their tools.")


class UnknownTool(CallFailed):
    kind = "unknown_tool"

    @classmethod
    def of(cls, agent_id: str, tool: str, known: list[str]) -> UnknownTool:
        listed = ", ".join(known) or "none"
        return cls(f"Agent '{agent_id}' has no tool '{tool}'. Its tools: {listed}.")


class CallRefused(CallFailed):
    """The hub will not call this agent (not approved, or it takes no tool calls)."""

    kind = "refused"

    @classmethod
    def pending(cls, agent_id: str) -> CallRefused:
        return cls(f"Agent '{agent_id}' is waiting for an administrator's approval.")

    @classmethod
    def name_clash(cls, agent_id: str, other: str) -> CallRefused:
        return cls(
            f"Agent '{agent_id}' is not served: its tools would be offered under the names of agent "
            f"'{other}' (their ids read alike); remove one of them and register the other again."
        )

    @classmethod
    def not_mcp(cls, agent_id: str) -> CallRefused:
        return cls(f"Agent '{agent_id}' did not say it speaks MCP: it takes no tool calls.")


class DeviceGone(CallFailed):
    """The device is offline, or its connection ended before it answered."""

    kind = "gone"

    @classmethod
    def offline(cls, agent_id: str, last_seen: datetime | None = None) -> DeviceGone:
        return cls(
            f"Agent '{agent_id}' is offline{_last_reachable(last_seen)}. "
            "Call list_agents to see which agents are online."
        )

    @classmethod
    def on_demand(cls, agent_id: str, last_seen: datetime | None) -> DeviceGone:
        """A device that connects only while someone talks to it (stock xiaozhi firmware)."""
        return cls(
            f"Agent '{agent_id}' connects to the hub only while someone is talking to it, and nobody "
            f"is now{_last_reachable(last_seen)}. Its tools can be called during a conversation with "
            "it; call list_agents to see when it is online."
        )

    @classmethod
    def during(cls, agent_id: str, tool: str) -> DeviceGone:
        return cls(
            f"Agent '{agent_id}' disconnected before answering tool '{tool}'; the action may or may "
            "not have happened. Call list_agents to see when it is back online."
        )

    @classmethod
    def unreachable(cls, agent_id: str, tool: str, why: str) -> DeviceGone:
        return cls(f"Agent '{agent_id}' could not take tool '{tool}': {why}")


class DeviceTimeout(CallFailed):
    kind = "timeout"

    @classmethod
    def after(cls, agent_id: str, tool: str, seconds: float) -> DeviceTimeout:
        return cls(
            f"Agent '{agent_id}' did not answer tool '{tool}' within {seconds:g} s; "
            "the device may be busy or out of reach. Try again later."
        )


class DeviceError(CallFailed):
    """The device answered with a JSON-RPC error."""

    kind = "device"

    @classmethod
    def answered(cls, agent_id: str, tool: str, message: str, code: int | None) -> DeviceError:
        return cls(
            f"Agent '{agent_id}' refused tool '{tool}': {message}" + (f" (code {code})" if code else "")
        )


class HubStopping(CallFailed):
    """The process serving the call is stopping (SIGTERM)."""

    kind = "stopping"

    @classmethod
    def now(cls) -> HubStopping:
        return cls("The hub is stopping: try again in a moment.")


FAILURES: dict[str, type[CallFailed]] = {
    failure.kind: failure
    for failure in (
        CallFailed,
        UnknownAgent,
        UnknownTool,
        CallRefused,
        DeviceGone,
        DeviceTimeout,
        DeviceError,
        HubStopping,
    )
}


def _last_reachable(last_seen: datetime | None) -> str:
    return f" (last reachable {last_seen.isoformat(timespec='seconds')})" if last_seen else ""


def absent(agent_id: str, state: str, last_seen: datetime | None = None) -> CallFailed:
    """Why an agent that is not online (`selectors.agent_presence`: its state, and when it was
    last reachable) cannot be called."""
    if state == "unknown":
        return UnknownAgent.named(agent_id)
    if state == "pending":
        return CallRefused.pending(agent_id)
    if state == "on_demand":
        return DeviceGone.on_demand(agent_id, last_seen)
    return DeviceGone.offline(agent_id, last_seen)


def to_wire(outcome: CallResult | CallFailed) -> dict[str, Any]:
    if isinstance(outcome, CallFailed):
        return {"failure": outcome.kind, "message": outcome.message}
    return {"result": outcome.as_mcp()}


def from_wire(message: dict[str, Any]) -> CallResult:
    """The outcome a reply carried: its result, or its failure raised."""
    result = message.get("result")
    if isinstance(result, dict):
        return CallResult.from_mcp(result)
    failure = FAILURES.get(str(message.get("failure")), CallFailed)
    raise failure(str(message.get("message") or "the device's process gave no reason"))
