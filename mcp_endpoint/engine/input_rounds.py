"""Asking the client during a stateless (2026-07-28) request: multi-round-trip requests
(SEP-2322), for `tools/call` and `prompts/get`.

Without a session there is no stream to send a request on and wait. Instead the request
answers `resultType: "input_required"` with the question(s) in `inputRequests`, and the
client retries the same request with its answers in `inputResponses` and our
`requestState` echoed. The tool (or prompt) runs again from the start; each question has a
key, the one its author gave it or else its number in the order asked ("1", "2"...), and a
question already answered is answered from the retry at once, so it goes one round further
each time. Questions asked together (`ToolContext.request_client_all`) go out in one round;
a round answered only in part asks again for what is missing. Answers under keys nobody
asked are ignored. The answers of earlier rounds travel in `requestState`, signed
(django.core.signing) and bound to the tool or prompt, so a client cannot hand one's state
to another, with the keys asked so far: a question marked `asked_first` (a confirmation) is
answered only by a response to a key the hub asked in an earlier round, never by one the
client sends on its first request.

So a tool that asks should ask before it changes anything: what it does before a question
is done again on every round.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.core import signing

from mcp_endpoint.engine import jsonrpc
from mcp_endpoint.engine.jsonrpc import JsonRpcError
from mcp_endpoint.engine.tools import ClientRequest

SALT = "homehub.mcp.input-rounds"


class InputRequired(Exception):
    """Raised through the tool when it asks something not answered yet."""

    def __init__(self, requests: dict[str, ClientRequest]) -> None:
        super().__init__(", ".join(r.method for r in requests.values()))
        self.requests = requests


@dataclass
class InputRounds:
    subject: str  # what the state is bound to: a tool's name, or "prompt:<name>"
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)  # earlier rounds' and this one's
    used: dict[str, dict[str, Any]] = field(default_factory=dict)  # those a question took: kept on
    asked: set[str] = field(default_factory=set)  # the keys asked in earlier rounds (signed)
    numbered: int = 0

    @classmethod
    def from_params(cls, subject: str, params: dict[str, Any]) -> InputRounds:
        """The answers so far: those of earlier rounds (in `requestState`) and this one's."""
        answers: dict[str, dict[str, Any]] = {}
        asked: set[str] = set()
        state = params.get("requestState")
        if state is not None:
            try:
                kept = signing.loads(state, salt=SALT) if isinstance(state, str) else None
            except signing.BadSignature:
                kept = None
            if not isinstance(kept, dict) or kept.get("subject") != subject:
                raise JsonRpcError(
                    jsonrpc.INVALID_PARAMS, "Invalid params: unknown or tampered 'requestState'"
                )
            answers.update(kept.get("answers") or {})
            asked.update(kept.get("asked") or [])
        responses = params.get("inputResponses")
        if responses is not None:
            if not isinstance(responses, dict) or not all(isinstance(v, dict) for v in responses.values()):
                raise JsonRpcError(
                    jsonrpc.INVALID_PARAMS, "Invalid params: 'inputResponses' must map keys to result objects"
                )
            answers.update(responses)
        return cls(subject, answers, asked=asked)

    def answer_or_ask(self, requests: Sequence[ClientRequest]) -> list[dict[str, Any]]:
        """The answers to `requests`, or InputRequired for those not answered yet."""
        keyed: list[tuple[str, ClientRequest]] = []
        for request in requests:
            if request.key is None:
                self.numbered += 1
            keyed.append((request.key or str(self.numbered), request))
        answered = {key for key, request in keyed if key in self.answers and self._may_answer(key, request)}
        missing = {key: request for key, request in keyed if key not in answered}
        self.used.update({key: self.answers[key] for key in answered})
        if missing:
            raise InputRequired(missing)
        return [self.answers[key] for key, _ in keyed]

    def _may_answer(self, key: str, request: ClientRequest) -> bool:
        return not request.asked_first or key in self.asked

    def result(self, asked: InputRequired) -> dict[str, Any]:
        keys = sorted(self.asked | set(asked.requests))
        state = signing.dumps(
            {"subject": self.subject, "answers": self.used, "asked": keys}, salt=SALT, compress=True
        )
        return {
            "resultType": "input_required",
            "inputRequests": {
                key: {"method": request.method, "params": request.params}
                for key, request in asked.requests.items()
            },
            "requestState": state,
        }
