"""channels-redis's pub/sub layer that notes which thread sent each group message, and what."""

import threading

from channels_redis.pubsub import RedisPubSubChannelLayer


class SendersRecorded(RedisPubSubChannelLayer):
    senders: list[tuple[str, dict]] = []  # (the thread's name, the message)

    async def group_send(self, group, message):
        SendersRecorded.senders.append((threading.current_thread().name, message))
        await super().__getattr__("group_send")(group, message)
