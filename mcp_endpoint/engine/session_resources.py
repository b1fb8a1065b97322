"""The resources, prompts and completion methods of the MCP engine, and resource
subscriptions: `resources/*`, `prompts/*`, `completion/complete`, `subscriptions/listen`
and the change events that become `notifications/resources/updated`.

A mixin of `session.ServerSession`, whose dispatch table names these handlers; it uses
the session's caller, state, resource registry and listen streams, never a transport.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from asgiref.sync import sync_to_async

from mcp_endpoint.engine import jsonrpc, tasks_extension
from mcp_endpoint.engine.input_rounds import InputRequired, InputRounds
from mcp_endpoint.engine.jsonrpc import JsonRpcError
from mcp_endpoint.engine.listen import ListenStreams
from mcp_endpoint.engine.protocol import RequestContext, SessionState, cacheable
from mcp_endpoint.engine.providers import (
    Messages,
    Prompt,
    ResourceContents,
    ResourceNotFound,
    ResourceRegistry,
)
from mcp_endpoint.engine.session_requests import missing_capability_error
from mcp_endpoint.engine.tool_errors import MissingClientCapability, ToolError
from mcp_endpoint.engine.tools import Caller, ToolContext

COMPLETION_MAX_VALUES = 100  # the most `completion/complete` may return


class ResourceMethods:
    """Handlers of `ServerSession` for resources, prompts, completions and subscriptions."""

    # Set by ServerSession.__init__, and two of its methods.
    caller: Caller
    state: SessionState
    resources: ResourceRegistry
    listens: ListenStreams
    on_subscribe: Callable[[], Awaitable[None]] | None
    listen_for_changes: Callable[[], None]
    tool_context: Callable[[RequestContext], ToolContext]
    _declares_tasks: Callable[[RequestContext], bool]
    _send_quietly: Callable[[dict[str, Any]], Awaitable[None]]

    async def _list_resources(self, ctx: RequestContext) -> dict[str, Any]:
        listed = [
            r.definition()
            for provider in self.resources.visible(self.caller.scopes)
            for r in await sync_to_async(provider.list_resources)()
        ]
        return cacheable(ctx, {"resources": listed})

    async def _list_templates(self, ctx: RequestContext) -> dict[str, Any]:
        listed = [t.definition() for p in self.resources.visible(self.caller.scopes) for t in p.templates()]
        return cacheable(ctx, {"resourceTemplates": listed})

    def _resource_uri(self, ctx: RequestContext) -> str:
        uri = ctx.params.get("uri")
        if not isinstance(uri, str) or not uri:
            raise JsonRpcError(jsonrpc.INVALID_PARAMS, "Invalid params: 'uri' is required")
        return uri

    async def _read_resource(self, ctx: RequestContext) -> dict[str, Any]:
        uri = self._resource_uri(ctx)
        try:
            provider = self.resources.provider_for(uri, self.caller.scopes)
            value = await sync_to_async(provider.read)(uri)
        except ResourceNotFound:
            raise JsonRpcError(jsonrpc.INVALID_PARAMS, f"Resource not found: {uri}", {"uri": uri}) from None
        if isinstance(value, ResourceContents):
            contents = value.as_mcp(uri)
        else:
            contents = {"uri": uri, "mimeType": "application/json", "text": value}
        return cacheable(ctx, {"contents": [contents]}, ttl=0)

    async def _subscribe(self, ctx: RequestContext) -> dict[str, Any]:
        uri = self._resource_uri(ctx)
        if not self._visible(uri):
            raise JsonRpcError(jsonrpc.INVALID_PARAMS, f"Resource not found: {uri}", {"uri": uri})
        if uri not in self.state.subscriptions:
            self.state.subscriptions.append(uri)
        if self.on_subscribe is not None:
            await self.on_subscribe()
        return {}

    async def _unsubscribe(self, ctx: RequestContext) -> dict[str, Any]:
        uri = self._resource_uri(ctx)
        if uri in self.state.subscriptions:
            self.state.subscriptions.remove(uri)
        return {}

    async def on_change(self, event: dict[str, Any]) -> None:
        """A change event from the channel layer: tell the client which subscribed resources moved."""
        listened = self.listens.uris
        if not self.state.subscriptions and not listened:
            return
        moved = self.resources.uris_for_event(event)
        self.listens.resources_updated(sorted(moved & listened))
        for uri in sorted(moved & set(self.state.subscriptions)):
            await self._send_quietly(jsonrpc.notification("notifications/resources/updated", {"uri": uri}))

    async def _listen(self, ctx: RequestContext) -> dict[str, Any]:
        """`subscriptions/listen`: this request's stream carries change notifications until
        the client cancels it or goes away (so it never returns on its own)."""
        wanted = ctx.params.get("notifications")
        uris = wanted.get("resourceSubscriptions") or [] if isinstance(wanted, dict) else None
        task_ids = wanted.get("taskIds") or [] if isinstance(wanted, dict) else None
        if (
            not isinstance(wanted, dict)
            or not isinstance(uris, list)
            or not all(isinstance(u, str) for u in uris)
            or not isinstance(task_ids, list)
            or not all(isinstance(t, str) for t in task_ids)
        ):
            raise JsonRpcError(
                jsonrpc.INVALID_PARAMS,
                "Invalid params: 'notifications' must be an object, its 'resourceSubscriptions' "
                "a list of URIs, its 'taskIds' a list of task ids",
            )
        honored: dict[str, Any] = {}
        if wanted.get("toolsListChanged") is True:
            honored["toolsListChanged"] = True
            self.listen_for_changes()
        visible = [uri for uri in dict.fromkeys(uris) if self._visible(uri)]
        if visible:  # unknown or out-of-scope URIs are left out of the acknowledgement
            honored["resourceSubscriptions"] = visible
            if self.on_subscribe is not None:
                await self.on_subscribe()
        watch = None
        if task_ids and self._declares_tasks(ctx):  # the caller's own live tasks only
            own = await tasks_extension.own_live(self.caller, task_ids)
            if own:
                honored["taskIds"] = own
                watch = partial(tasks_extension.watch, self.caller, own)
        await self.listens.serve(ctx.request_id, honored, ctx.notify, watch)
        return {}  # not reached: serve() ends only by cancellation

    def _visible(self, uri: str) -> bool:
        try:
            self.resources.provider_for(uri, self.caller.scopes)
        except ResourceNotFound:
            return False
        return True

    def _prompt(self, ctx: RequestContext) -> Prompt:
        return self._prompt_named(ctx.params.get("name"))

    def _prompt_named(self, name: Any) -> Prompt:
        prompt = self.resources.prompts.get(name) if isinstance(name, str) else None
        if prompt is None or prompt.scope not in self.caller.scopes:
            raise JsonRpcError(jsonrpc.INVALID_PARAMS, f"Unknown prompt: {name}")
        return prompt

    async def _list_prompts(self, ctx: RequestContext) -> dict[str, Any]:
        listed = [p.definition() for p in self.resources.prompts.values() if p.scope in self.caller.scopes]
        return cacheable(ctx, {"prompts": listed})

    async def _get_prompt(self, ctx: RequestContext) -> dict[str, Any]:
        prompt = self._prompt(ctx)
        arguments = ctx.params.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise JsonRpcError(jsonrpc.INVALID_PARAMS, "Invalid params: 'arguments' must be an object")
        missing = [a.name for a in prompt.arguments if a.required and a.name not in arguments]
        if missing:
            raise JsonRpcError(
                jsonrpc.INVALID_PARAMS, f"Invalid params: missing prompt arguments: {', '.join(missing)}"
            )
        texts = {k: str(v) for k, v in arguments.items()}
        if prompt.render is not None:
            messages = await sync_to_async(prompt.render)(texts)
        else:
            try:
                messages = await self._render_asking(ctx, prompt, texts)
            except InputRequired as asked:  # a stateless request: the client answers and asks again
                assert ctx.input_rounds is not None
                return ctx.input_rounds.result(asked)
        return {"description": prompt.description, "messages": messages}

    async def _render_asking(
        self, ctx: RequestContext, prompt: Prompt, arguments: dict[str, str]
    ) -> Messages:
        """A prompt that asks the client first; in a stateless request through `input_rounds`."""
        assert prompt.render_asking is not None
        if ctx.stateless:
            ctx.input_rounds = InputRounds.from_params(f"prompt:{prompt.name}", ctx.params)
        try:
            return await prompt.render_asking(arguments, self.tool_context(ctx))
        except MissingClientCapability as missing:
            raise missing_capability_error(missing) from None
        except ToolError as failed:  # the client answered with an error, or not in time
            raise JsonRpcError(jsonrpc.INTERNAL_ERROR, failed.message) from None

    async def _complete(self, ctx: RequestContext) -> dict[str, Any]:
        """Suggestions for a prompt argument (its declared `values` that start with what was
        typed); resource templates offer none yet."""
        ref, argument = ctx.params.get("ref"), ctx.params.get("argument")
        if (
            not isinstance(ref, dict)
            or not isinstance(argument, dict)
            or not isinstance(argument.get("name"), str)
        ):
            raise JsonRpcError(
                jsonrpc.INVALID_PARAMS, "Invalid params: 'ref' and 'argument' (with a 'name') are required"
            )
        typed = str(argument.get("value") or "").lower()
        if ref.get("type") == "ref/prompt":
            prompt = self._prompt_named(ref.get("name"))
            candidates = next((a.values for a in prompt.arguments if a.name == argument["name"]), ())
        elif ref.get("type") == "ref/resource" and isinstance(ref.get("uri"), str):
            candidates = ()
        else:
            raise JsonRpcError(
                jsonrpc.INVALID_PARAMS, "Invalid params: 'ref' must be a ref/prompt or a ref/resource"
            )
        values = [v for v in candidates if v.lower().startswith(typed)]
        return {
            "completion": {
                "values": values[:COMPLETION_MAX_VALUES],
                "total": len(values),
                "hasMore": len(values) > COMPLETION_MAX_VALUES,
            }
        }
