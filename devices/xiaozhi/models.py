"""The app's models, each kept beside the code that uses it."""

from devices.xiaozhi.mqtt.models import MqttCredential

__all__ = ["MqttCredential"]
