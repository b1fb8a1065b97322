"""The embedded broker's plugins (amqtt's plugin API): who may connect, what each device may
publish, subscribe and receive, and the events the hub acts on. Each hands its question to the
`DeviceListener` that configured it (its `listener` option)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from amqtt.contexts import Action, BaseContext
from amqtt.plugins.base import BaseAuthPlugin, BasePlugin, BaseTopicPlugin
from amqtt.session import ApplicationMessage, Session

if TYPE_CHECKING:
    from devices.xiaozhi.mqtt.listener import DeviceListener


@dataclass
class ListenerOption:
    listener: Any = None  # the DeviceListener (dacite, which builds this, checks no more than Any)


def _listener(plugin: BasePlugin[Any]) -> DeviceListener:
    listener: DeviceListener = plugin.config.listener
    return listener


class DeviceAuth(BaseAuthPlugin):
    """Only a connection the listener's gate admitted, with the same credentials."""

    Config = ListenerOption

    async def authenticate(self, *, session: Session) -> bool | None:
        return _listener(self).admits(session)


class DeviceTopics(BaseTopicPlugin):
    """The ACL: a device publishes on its own topic only, and subscribes to and receives its own
    deliveries only."""

    Config = ListenerOption

    async def topic_filtering(
        self, *, session: Session | None = None, topic: str | None = None, action: Action | None = None
    ) -> bool | None:
        return _listener(self).allows(session, topic, action)


class DeviceEvents(BasePlugin[BaseContext]):
    """A device connected (the hub takes it over then), and a message it published."""

    Config = ListenerOption

    async def on_broker_client_connected(self, *, client_id: str, client_session: Session) -> None:
        await _listener(self).on_connected(client_id, client_session)

    async def on_broker_message_broadcast(self, *, client_id: str, message: ApplicationMessage) -> None:
        _listener(self).on_message(client_id, message.topic, bytes(message.data))
