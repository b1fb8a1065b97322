"""The `mqtt` section of a stock xiaozhi device's OTA answer.

Stock firmware stores every key of this section (`Settings("mqtt")`) and, finding it, talks to
the hub over MQTT instead of the WebSocket: it connects to `endpoint` with `client_id`,
`username` and `password`, keeps the connection up with `keepalive`, and publishes all its
messages on `publish_topic` (port 8883 would make it speak TLS, which the device listener
does not: `credentials.endpoint` refuses it).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from audit.models import Event
from devices.agents.models import Agent
from devices.xiaozhi.mqtt import credentials


def mqtt_section(
    agent: Agent, *, actor: str | None = None, interface: str = Event.Interface.DEVICE
) -> dict[str, Any] | None:
    """The section for this device, with a password minted now (the previous one stops working
    for new connections), or None when DEVICE_MQTT_ENDPOINT is unset (devices are then offered
    the WebSocket only). The minting is audited as `agent.mqtt_credentials`, by the device
    itself unless `actor` says who asked."""
    address = credentials.endpoint()
    if address is None:
        return None
    credential, password = credentials.issue(agent, actor=actor or agent.agent_id, interface=interface)
    return {
        "endpoint": str(address),
        "client_id": credential.client_id,
        "username": credential.client_id,
        "password": password,
        "publish_topic": credentials.publish_topic(credential.client_id),
        "keepalive": settings.DEVICE_MQTT_KEEPALIVE_SECONDS,
    }
