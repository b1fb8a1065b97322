"""Requests the MCP engine sends its client (`sampling/createMessage`, `elicitation/create`,
`roots/list`) on behalf of a tool, and how answers and cancellations find the request
waiting for them.

Both travel through `relay`, keyed by the session's relay name: over HTTP the client's
answer, or its `notifications/cancelled`, is another POST that may reach any hub process,
so the name is the HTTP session id and delivery is broadcast; stream transports get a
private per-process name. A mixin of `session.ServerSession`.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import uuid
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from django.conf import settings

from mcp_endpoint.engine import jsonrpc, relay
from mcp_endpoint.engine.jsonrpc import JsonRpcError
from mcp_endpoint.engine.protocol import META_CLIENT_CAPABILITIES, RequestContext, Send, SessionState
from mcp_endpoint.engine.tool_errors import ClientRequestError, MissingClientCapability
from mcp_endpoint.engine.tools import ClientRequest

logger = logging.getLogger(__name__)

# Server-to-client requests, and the client capability each needs (declared in initialize).
CLIENT_REQUEST_CAPABILITY = {
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
    "roots/list": "roots",
}


class ClientRequests:
    """`ServerSession`'s requests to its client and its relay routing."""

    # Set by ServerSession.__init__.
    state: SessionState
    relay_id: str | None
    _local_id: str | None
    can_ask_client: bool

    async def request_client(
        self, ctx: RequestContext, requests: Sequence[ClientRequest]
    ) -> list[dict[str, Any]]:
        """Send `requests` to the client on the stream of request `ctx`, all at once, and wait
        for their answers (in the same order).

        Each answer comes back through `receive`/`handle` as a JSON-RPC response: on the
        same connection (stdio, WebSocket) or, over HTTP, as another POST to any process,
        routed here by `relay`. A stateless request asks them through `input_rounds`
        instead. One that fails withdraws the others.
        """
        check_declared(requests, self.client_capabilities(ctx))
        if ctx.input_rounds is not None:  # stateless: answered by the client's retry
            return ctx.input_rounds.answer_or_ask(requests)
        if ctx.stateless or not self.can_ask_client:
            raise ClientRequestError(
                f"Cannot send '{requests[0].method}' to the client in this request: there is no "
                "response stream"
            )
        asking = [asyncio.ensure_future(self._ask(ctx, r.method, r.params)) for r in requests]
        try:
            return list(await asyncio.gather(*asking))
        finally:
            for task in asking:  # those still waiting when one failed (or the call was cancelled)
                task.cancel()

    async def _ask(self, ctx: RequestContext, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id = f"hh-{secrets.token_urlsafe(12)}"
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

        def resolve(message: Any) -> None:
            if not answer.done() and isinstance(message, dict):
                answer.set_result(message)

        timeout = settings.MCP_CLIENT_REQUEST_TIMEOUT_SECONDS
        with self._expecting("reply", request_id, resolve):
            await self._listen_across()
            await ctx.notify({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            try:
                message = await asyncio.wait_for(answer, timeout)
            except TimeoutError:
                cancel = {"requestId": request_id, "reason": f"no answer within {timeout:g} s"}
                await quietly(ctx.notify, jsonrpc.notification("notifications/cancelled", cancel))
                raise ClientRequestError(
                    f"The client did not answer '{method}' within {timeout:g} s"
                ) from None
            except asyncio.CancelledError:
                cancel = {"requestId": request_id, "reason": "the tool call was cancelled"}
                await quietly(ctx.notify, jsonrpc.notification("notifications/cancelled", cancel))
                raise
        if "error" in message:
            error = message["error"] if isinstance(message["error"], dict) else {}
            raise ClientRequestError(
                f"The client answered '{method}' with an error: {error.get('message', 'no message')}"
            )
        result = message.get("result")
        if not isinstance(result, dict):
            raise ClientRequestError(f"The client answered '{method}' without a valid result")
        return result

    def client_capabilities(self, ctx: RequestContext) -> dict[str, Any]:
        """What the client of request `ctx` declared it can do."""
        if ctx.stateless:  # every 2026-07-28 request declares them in its _meta
            meta = ctx.params.get("_meta")
            caps = meta.get(META_CLIENT_CAPABILITIES) if isinstance(meta, dict) else None
            return caps if isinstance(caps, dict) else {}
        return self.state.client_capabilities

    @property
    def _relay_name(self) -> str:
        if self.relay_id is not None:
            return self.relay_id
        if self._local_id is None:
            self._local_id = f"local:{uuid.uuid4().hex}"
        return self._local_id

    def _expecting(self, kind: str, key: relay.Key, handler: relay.Handler) -> AbstractContextManager[None]:
        return relay.expecting(kind, self._relay_name, key, handler)

    async def _deliver(self, kind: str, key: relay.Key, payload: Any) -> None:
        await relay.deliver(kind, self._relay_name, key, payload, broadcast=self.relay_id is not None)

    async def _listen_across(self) -> None:
        """An HTTP session's answers may reach another process: hear them from there."""
        if self.relay_id is not None:
            await relay.listen()


def check_declared(requests: Sequence[ClientRequest], declared: Mapping[str, Any]) -> None:
    """MissingClientCapability for the first request whose capability the client did not declare."""
    for request in requests:
        capability = CLIENT_REQUEST_CAPABILITY.get(request.method)
        if capability and capability not in declared:
            raise MissingClientCapability(capability, request.method)


def missing_capability_error(missing: MissingClientCapability) -> JsonRpcError:
    """-32021: the request needs a capability the client did not declare; `requiredCapabilities`
    is a ClientCapabilities object naming it (in every era: older revisions define no code for
    it, and an `isError` result would blame the tool)."""
    return JsonRpcError(
        jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"Missing required client capability: {missing.message}",
        {"requiredCapabilities": {missing.capability: {}}},
    )


async def quietly(send: Send, message: dict[str, Any]) -> None:
    """Send a message no one waits for (a cancellation, a change notification)."""
    try:
        await send(message)
    except Exception:  # the stream is gone: the client will not wait for this anyway
        logger.debug("could not deliver %s", message.get("method"))
