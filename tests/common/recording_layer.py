"""channels-redis's pub/sub layer that notes which thread sent each group message."""

import threading

from channels_redis.pubsub import RedisPubSubChannelLayer


class SendersRecorded(RedisPubSubChannelLayer):
    senders: list[str] = []

    async def group_send(self, group, message):
        SendersRecorded.senders.append(threading.current_thread().name)
        await super().__getattr__("group_send")(group, message)
