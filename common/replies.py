"""Answers from other processes, on one channel per process.

A process that asks another one something over the channel layer (the device gateway's call
to a device connected elsewhere, `/healthz`'s probe of the layer itself) names `replies`'
channel as where to answer and a fresh key; the answer carries the key back (`answer`) and is
handed to the one question waiting for it. One channel for every question, never one per
question: channels-redis's pub/sub layer keeps each channel it was given (a Redis subscription
and a queue) until a receive on it is cancelled, and Channels has no call to delete one.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from common.groups import ProcessChannel

REPLY_TO = "reply_to"
REPLY_KEY = "reply_key"

Ask = Callable[[dict[str, str]], Awaitable[None]]


class Replies:
    """This process's channel for answers (`ProcessChannel`: one per event loop)."""

    def __init__(self) -> None:
        self._inbox = ProcessChannel(self._heard, "replies")
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}

    async def ask(self, send: Ask, timeout: float) -> dict[str, Any]:
        """Send a question with `send(address)`, where `address` is the `reply_to` and
        `reply_key` to put in it, and return its answer; TimeoutError after `timeout` s."""
        channel = await self._inbox.open()
        key = secrets.token_hex(12)
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[key] = answer
        try:
            await send({REPLY_TO: channel, REPLY_KEY: key})
            return await asyncio.wait_for(answer, timeout)
        finally:
            del self._waiting[key]

    async def _heard(self, message: dict[str, Any]) -> None:
        answer = self._waiting.get(str(message.get(REPLY_KEY)))
        if answer is not None and not answer.done():  # else late: its question gave up
            answer.set_result(message)


async def answer(layer: Any, question: dict[str, Any], message: dict[str, Any]) -> None:
    """Send `message` as the answer to `question` (which `Replies.ask` sent)."""
    await layer.send(question[REPLY_TO], {**message, REPLY_KEY: question.get(REPLY_KEY)})


replies = Replies()
