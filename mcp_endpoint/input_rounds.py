"""Asking the client during a stateless (2026-07-28) tool call: multi-round-trip requests.

Without a session there is no stream to send a request on and wait. Instead the call
answers `resultType: "input_required"` with the request(s) in `inputRequests`, and the
client retries the same `tools/call` with its answers in `inputResponses` and our
`requestState` echoed. The tool runs again from the start; each of its questions is
numbered in order ("1", "2"...), and a question already answered is answered from the
retry at once, so the tool goes one question further each round. The answers of earlier
rounds travel in `requestState`, signed (django.core.signing) and bound to the tool, so a
client cannot hand one tool's state to another.

So a tool that asks should ask before it changes anything: what it does before a question
is done again on every round.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.core import signing

from mcp_endpoint import jsonrpc
from mcp_endpoint.jsonrpc import JsonRpcError

SALT = "homehub.mcp.input-rounds"


class InputRequired(Exception):
    """Raised through the tool when it asks something not answered yet."""

    def __init__(self, key: str, method: str, params: dict[str, Any]) -> None:
        super().__init__(method)
        self.key, self.method, self.params = key, method, params


@dataclass
class InputRounds:
    tool: str
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    asked: int = 0

    @classmethod
    def from_params(cls, tool: str, params: dict[str, Any]) -> InputRounds:
        """The answers so far: those of earlier rounds (in `requestState`) and this one's."""
        answers: dict[str, dict[str, Any]] = {}
        state = params.get("requestState")
        if state is not None:
            try:
                kept = signing.loads(state, salt=SALT) if isinstance(state, str) else None
            except signing.BadSignature:
                kept = None
            if not isinstance(kept, dict) or kept.get("tool") != tool:
                raise JsonRpcError(
                    jsonrpc.INVALID_PARAMS, "Invalid params: unknown or tampered 'requestState'"
                )
            answers.update(kept.get("answers") or {})
        responses = params.get("inputResponses")
        if responses is not None:
            if not isinstance(responses, dict) or not all(isinstance(v, dict) for v in responses.values()):
                raise JsonRpcError(
                    jsonrpc.INVALID_PARAMS, "Invalid params: 'inputResponses' must map keys to result objects"
                )
            answers.update(responses)
        return cls(tool, answers)

    def answer_or_ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.asked += 1
        key = str(self.asked)
        if key in self.answers:
            return self.answers[key]
        raise InputRequired(key, method, params)

    def result(self, asked: InputRequired) -> dict[str, Any]:
        state = signing.dumps({"tool": self.tool, "answers": self.answers}, salt=SALT, compress=True)
        return {
            "resultType": "input_required",
            "inputRequests": {asked.key: {"method": asked.method, "params": asked.params}},
            "requestState": state,
        }
