"""MCP Streamable HTTP at `/mcp`, as a bare ASGI app (no Django middleware on the hot path).

- POST carries one JSON-RPC message (or a 2025-03-26 batch). Notifications and responses
  get 202; requests get a short SSE stream (priming event, any progress or log
  notifications, then the response), or plain JSON with MCP_HTTP_JSON_RESPONSE.
- Handshake-era sessions (`Mcp-Session-Id`) live in the database, bound to the token that
  created them, so any hub process can serve any request. 2026-07-28 requests are stateless.
- GET opens the server-to-client stream of a session (tool list changes); DELETE ends it.

This module checks requests, finds sessions and answers POSTs; the SSE response itself is
`sse_stream.SseStream`, and the streams that outlive a request's answer (GET, resumption,
`subscriptions/listen`) are served by `http_streams`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, TypeGuard

from asgiref.sync import sync_to_async
from django.conf import settings

from common.origins import host_allowed
from mcp_endpoint.auth.oauth.resource_indicators import hub_resource, same_resource
from mcp_endpoint.auth.tokens import aauthenticate, bearer_token, caller_for
from mcp_endpoint.engine import jsonrpc
from mcp_endpoint.engine.jsonrpc import JsonRpcError
from mcp_endpoint.engine.protocol import (
    META_PROTOCOL_VERSION,
    STATELESS_VERSIONS,
    SUPPORTED_VERSIONS,
    Outgoing,
    SessionState,
    stateless_meta,
)
from mcp_endpoint.engine.session import ServerSession, too_many_in_flight
from mcp_endpoint.engine.tools import Caller, Tool
from mcp_endpoint.models import AccessToken
from mcp_endpoint.transports import http_sessions, mirrored_headers, sse_store
from mcp_endpoint.transports.asgi_http import (
    AsgiReceive,
    AsgiSend,
    BodyTooLarge,
    Request,
    origin_allowed,
    read_body,
    respond,
    respond_json,
)
from mcp_endpoint.transports.db_upkeep import tidy_connections
from mcp_endpoint.transports.http_streams import listen_stream, resume_post_stream, serve_session_stream
from mcp_endpoint.transports.slots import Slots
from mcp_endpoint.transports.sse_stream import SseStream, primes

logger = logging.getLogger(__name__)

INTERFACE = "mcp-http"
RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource/mcp"

acreate_session = sync_to_async(http_sessions.create)
aload_session = sync_to_async(http_sessions.load)
asave_session = sync_to_async(http_sessions.save)
aend_session = sync_to_async(http_sessions.end)
# POSTs of each session running in this process now (MCP_MAX_CONCURRENT_CALLS).
_running = Slots()


def _error_body(code: int, message: str, request_id: Any = None) -> dict[str, Any]:
    return jsonrpc.error_response(request_id, JsonRpcError(code, message))


def _accepts(accept: str, media_type: str) -> bool:
    kinds = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    return media_type in kinds or "*/*" in kinds or f"{media_type.split('/')[0]}/*" in kinds


class StreamableHttpApp:
    """The ASGI application mounted at `/mcp`."""

    async def __call__(self, scope: Mapping[str, Any], receive: AsgiReceive, send: AsgiSend) -> None:
        if scope["type"] == "lifespan":
            return
        request = Request.from_scope(scope)
        if not host_allowed(request.headers.get("host")):
            await respond_json(send, 403, _error_body(jsonrpc.INVALID_REQUEST, "Forbidden: host not allowed"))
            return
        if not origin_allowed(request):
            await respond_json(
                send, 403, _error_body(jsonrpc.INVALID_REQUEST, "Forbidden: origin not allowed")
            )
            return
        if request.method not in ("POST", "GET", "DELETE"):
            await respond_json(
                send,
                405,
                _error_body(jsonrpc.INVALID_REQUEST, f"Method not allowed: {request.method}"),
                [("allow", "GET, POST, DELETE")],
            )
            return
        await tidy_connections()
        token = await aauthenticate(bearer_token(request.headers.get("authorization")))
        if token is None or not _for_this_resource(token, request):
            await self._unauthorized(request, send)
            return
        caller = caller_for(token, INTERFACE)
        if request.method == "POST":  # checks the version header once it knows the request's id
            await self._post(request, receive, send, token, caller)
            return
        unsupported = _unsupported_version(request.headers)
        if unsupported is not None:
            await respond_json(send, 400, jsonrpc.error_response(None, unsupported))
            return
        if request.method == "GET":
            await self._get(request, receive, send, token, caller)
        else:
            await self._delete(request, send, token)

    async def _unauthorized(self, request: Request, send: AsgiSend) -> None:
        challenge = f'Bearer realm="homehub", resource_metadata="{_resource_metadata(request)}"'
        if request.headers.get("authorization"):
            challenge += (
                ', error="invalid_token", error_description="unknown, revoked or expired token,'
                ' or one for another resource"'
            )
        await respond_json(
            send,
            401,
            _error_body(
                jsonrpc.INVALID_REQUEST, "Unauthorized: a valid 'Authorization: Bearer <token>' is required"
            ),
            [("www-authenticate", challenge)],
        )

    # --- POST ------------------------------------------------------------------------------

    async def _post(
        self, request: Request, receive: AsgiReceive, send: AsgiSend, token: AccessToken, caller: Caller
    ) -> None:
        headers = request.headers
        accept = headers.get("accept", "")
        if not (_accepts(accept, "application/json") and _accepts(accept, "text/event-stream")):
            await respond_json(
                send,
                406,
                _error_body(
                    jsonrpc.INVALID_REQUEST,
                    "Not Acceptable: Accept must allow both application/json and text/event-stream",
                ),
            )
            return
        if headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            await respond_json(
                send,
                415,
                _error_body(jsonrpc.INVALID_REQUEST, "Unsupported Media Type: send application/json"),
            )
            return
        try:
            body = await read_body(receive, headers, settings.MCP_MAX_MESSAGE_BYTES)
        except BodyTooLarge:
            limit = settings.MCP_MAX_MESSAGE_BYTES
            await respond_json(
                send, 413, _error_body(jsonrpc.INVALID_REQUEST, f"Payload Too Large: limit is {limit} bytes")
            )
            return
        try:
            message = jsonrpc.parse(body)
        except JsonRpcError as exc:
            await respond_json(send, 400, jsonrpc.error_response(None, exc))
            return

        first = message[0] if isinstance(message, list) and message else message
        is_dict = isinstance(first, dict)
        request_id = first.get("id") if is_dict and jsonrpc.is_valid_id(first.get("id")) else None
        unsupported = _unsupported_version(headers)
        if unsupported is not None:
            await respond_json(send, 400, jsonrpc.error_response(request_id, unsupported))
            return
        params = first.get("params") if is_dict else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        stateless = headers.get("mcp-protocol-version") in STATELESS_VERSIONS or (
            isinstance(meta, dict) and META_PROTOCOL_VERSION in meta
        )
        if stateless:
            await self._stateless(request, receive, send, caller, message)
            return

        if is_dict and first.get("method") == "initialize" and not isinstance(message, list):
            await self._initialize(request, send, caller, token, message)
            return
        found = await self._session(headers, send, token)
        if found is None:
            return
        session_id, state = found
        if not _running.take(session_id, settings.MCP_MAX_CONCURRENT_CALLS):
            await respond_json(send, 429, jsonrpc.error_response(request_id, too_many_in_flight()))
            return
        try:
            session = ServerSession(caller, _discard, state=state)
            session.relay_id = session_id
            await self._answer(request, send, session, message, session_id)
        finally:
            _running.give_back(session_id)

    async def _stateless(
        self, request: Request, receive: AsgiReceive, send: AsgiSend, caller: Caller, message: Any
    ) -> None:
        """A 2026-07-28 request: no session; protocol errors carry their HTTP status."""
        headers = request.headers
        if not isinstance(message, dict) or "method" not in message:
            error = JsonRpcError(
                jsonrpc.INVALID_REQUEST,
                "Invalid Request: body must be a single JSON-RPC request or notification",
            )
            await respond_json(send, 400, jsonrpc.error_response(None, error))
            return
        if "id" in message:  # what the body must carry comes before comparing headers with it
            try:
                stateless_meta(message.get("params"))
            except JsonRpcError as exc:
                request_id = message["id"] if jsonrpc.is_valid_id(message["id"]) else None
                await respond_json(send, 400, jsonrpc.error_response(request_id, exc))
                return
        session = ServerSession(caller, _discard)
        mismatch = mirrored_headers.mismatch(headers, message, self._called_tool(session, message))
        if mismatch:
            error = JsonRpcError(jsonrpc.HEADER_MISMATCH, f"Header mismatch: {mismatch}")
            await respond_json(send, 400, jsonrpc.error_response(message.get("id"), error))
            return
        if "id" not in message:
            await session.handle(message)
            await respond(send, 202)
            return
        stream = SseStream(send, [])
        if message.get("method") == "subscriptions/listen":
            response = await listen_stream(receive, session, message, stream)
        else:
            response = await session.handle(message, notify=stream.event)
        code = response.get("error", {}).get("code") if isinstance(response, dict) else None
        status = STATELESS_ERROR_STATUS.get(code) if isinstance(code, int) else None
        if not stream.started and _forbidden(response):
            await respond_json(send, 403, response, [_insufficient_scope(request, response)])
        elif not stream.started and (status is not None or settings.MCP_HTTP_JSON_RESPONSE):
            await respond_json(send, status or 200, response)
        elif response is not None:
            await stream.event(response, last=True)
        else:
            await stream.finish()

    @staticmethod
    def _called_tool(session: ServerSession, message: dict[str, Any]) -> Tool | None:
        """The tool a `tools/call` names, when the caller may see it (its `Mcp-Param-*`
        headers are checked; another's would tell that it exists)."""
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        if message.get("method") != "tools/call" or not isinstance(name, str):
            return None
        tool = session.tools.get(name)
        return tool if tool is not None and tool.scope in session.caller.scopes else None

    async def _initialize(
        self, request: Request, send: AsgiSend, caller: Caller, token: AccessToken, message: dict[str, Any]
    ) -> None:
        session = ServerSession(caller, _discard)
        response = await session.handle(message)
        await session.close()
        if response is None:  # sent as a notification: owed no answer, like any other
            await respond(send, 202)
            return
        extra: list[tuple[str, str]] = []
        if isinstance(response, dict) and "result" in response:
            session_id = await acreate_session(token, session.state)
            extra.append(("mcp-session-id", session_id))
        await self._send_response(
            request, send, response, extra, priming=primes(session.state.protocol_version)
        )

    async def _answer(
        self, request: Request, send: AsgiSend, session: ServerSession, message: Any, session_id: str
    ) -> None:
        """Handle a message; stream notifications, requests to the client and the response
        back on this request. A stream the tool cuts off mid-call ends this request; the
        call goes on and its events are kept for a GET resuming the stream."""
        extra = [("mcp-session-id", session_id)]
        before = http_sessions.fingerprint(session.state)
        has_request = any(
            isinstance(m, dict) and "method" in m and "id" in m
            for m in (message if isinstance(message, list) else [message])
        )
        if not has_request:
            await session.handle(message)
            await _finish_session(session, session_id, before)
            await respond(send, 202, headers=extra)
            return
        if settings.MCP_HTTP_JSON_RESPONSE:
            session.can_ask_client = False  # the client hears nothing before the response
            response = await session.handle_cancellable(message)
            await _finish_session(session, session_id, before)
            if response is None:
                await respond(send, 202, headers=extra)
            else:
                await self._send_response(request, send, response, extra)
            return
        stream = SseStream(send, extra, priming=primes(session.state.protocol_version), session_id=session_id)
        cut_off = stream.watch_cut_off()
        work = asyncio.ensure_future(
            self._stream_answer(request, send, session, message, stream, session_id, before)
        )
        try:
            await asyncio.wait({work, cut_off}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            work.cancel()
            raise
        if work.done():
            work.result()
        else:
            work.add_done_callback(_log_failure)

    async def _stream_answer(
        self,
        request: Request,
        send: AsgiSend,
        session: ServerSession,
        message: Any,
        stream: SseStream,
        session_id: str,
        before: http_sessions.Fingerprint,
    ) -> None:
        extra = [("mcp-session-id", session_id)]
        response = await session.handle_cancellable(message, notify=stream.event, close_stream=stream.close)
        await _finish_session(session, session_id, before)
        if not stream.started and _forbidden(response):
            await self._send_response(request, send, response, extra)
        elif response is None:  # cancelled
            if stream.started:
                await stream.finish()
            else:
                await respond(send, 202, headers=extra)
        else:
            await stream.event(response, last=True)

    async def _send_response(
        self,
        request: Request,
        send: AsgiSend,
        response: Outgoing,
        extra: list[tuple[str, str]],
        *,
        priming: bool = True,
    ) -> None:
        if _forbidden(response):
            await respond_json(send, 403, response, [*extra, _insufficient_scope(request, response)])
            return
        if settings.MCP_HTTP_JSON_RESPONSE:
            await respond_json(send, 200, response, extra)
            return
        stream = SseStream(send, extra, priming=priming)
        await stream.event(response, last=True)

    # --- GET and DELETE ---------------------------------------------------------------------

    async def _get(
        self, request: Request, receive: AsgiReceive, send: AsgiSend, token: AccessToken, caller: Caller
    ) -> None:
        if not _accepts(request.headers.get("accept", ""), "text/event-stream"):
            await respond_json(
                send,
                406,
                _error_body(jsonrpc.INVALID_REQUEST, "Not Acceptable: Accept must allow text/event-stream"),
            )
            return
        found = await self._session(request.headers, send, token)
        if found is None:
            return
        session_id, state = found
        resume = sse_store.parse_event_id(request.headers.get("last-event-id"))
        record = await sse_store.load(session_id, resume[0]) if resume else None
        if resume and record is not None and record.kind == "post":
            await resume_post_stream(receive, send, session_id, *resume)
            return
        await serve_session_stream(receive, send, caller, token, session_id, state, resume, record)

    async def _delete(self, request: Request, send: AsgiSend, token: AccessToken) -> None:
        found = await self._session(request.headers, send, token)
        if found is None:
            return
        if await aend_session(found[0], token):
            await respond(send, 204)
        else:  # ended by a concurrent DELETE
            await respond_json(send, 404, _error_body(jsonrpc.INVALID_REQUEST, "Session not found"))

    @staticmethod
    async def _session(
        headers: dict[str, str], send: AsgiSend, token: AccessToken
    ) -> tuple[str, SessionState] | None:
        """The request's live session, or None once 400 (no header) or 404 (unknown, ended,
        expired, another token's: the client must initialize again) has been answered."""
        session_id = headers.get("mcp-session-id")
        if not session_id:
            error = _error_body(jsonrpc.INVALID_REQUEST, "Bad Request: Mcp-Session-Id header is required")
            await respond_json(send, 400, error)
            return None
        state = http_sessions.remembered(session_id, token)
        if state is False:
            state = await aload_session(session_id, token)
        if state is None:
            error = _error_body(
                jsonrpc.INVALID_REQUEST, "Session not found: it ended or expired; initialize again"
            )
            await respond_json(send, 404, error)
            return None
        return session_id, state


# HTTP status of each protocol error on a stateless (2026-07-28) request.
STATELESS_ERROR_STATUS = {
    jsonrpc.PARSE_ERROR: 400,
    jsonrpc.INVALID_REQUEST: 400,
    jsonrpc.INVALID_PARAMS: 400,
    jsonrpc.HEADER_MISMATCH: 400,
    jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    jsonrpc.UNSUPPORTED_PROTOCOL_VERSION: 400,
    jsonrpc.METHOD_NOT_FOUND: 404,
    jsonrpc.FORBIDDEN: 403,
}


def _unsupported_version(headers: dict[str, str]) -> JsonRpcError | None:
    """The error for an MCP-Protocol-Version header this hub does not speak (None if it does, or
    there is none)."""
    version = headers.get("mcp-protocol-version")
    if version is None or version in SUPPORTED_VERSIONS:
        return None
    return JsonRpcError(
        jsonrpc.UNSUPPORTED_PROTOCOL_VERSION,
        f"Bad Request: unsupported MCP-Protocol-Version {version}",
        {"supported": list(SUPPORTED_VERSIONS), "requested": version},
    )


def _for_this_resource(token: AccessToken, request: Request) -> bool:
    """An OAuth token is bound to the resource it was issued for (RFC 8707): this `/mcp`."""
    return not token.resource or same_resource(token.resource, hub_resource(request.base_url))


def _resource_metadata(request: Request) -> str:
    """Where the protected-resource metadata (RFC 9728) of this `/mcp` is."""
    return request.base_url + RESOURCE_METADATA_PATH


def _insufficient_scope(request: Request, response: dict[str, Any]) -> tuple[str, str]:
    """The challenge of a 403 for a token without the scope a tool needs (RFC 6750 3.1, with
    RFC 9728's `resource_metadata`), in either era."""
    scope = (response["error"].get("data") or {}).get("requiredScope", "")
    metadata = _resource_metadata(request)
    challenge = f'Bearer error="insufficient_scope", scope="{scope}", resource_metadata="{metadata}"'
    return ("www-authenticate", challenge)


def _forbidden(response: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(response, dict) and response.get("error", {}).get("code") == jsonrpc.FORBIDDEN


async def _finish_session(session: ServerSession, session_id: str, before: http_sessions.Fingerprint) -> None:
    await session.close()
    if http_sessions.fingerprint(session.state) != before:
        await asave_session(session_id, session.state)


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("MCP call on a stream cut off failed", exc_info=task.exception())


async def _discard(message: Outgoing) -> None:
    """POST sessions have no standing stream: unsolicited messages go to the GET stream."""
