from django.urls import path

from devices.agents.consumers import DeviceConsumer

websocket_urlpatterns = [
    path("ws/devices/", DeviceConsumer.as_asgi()),  # type: ignore[arg-type]
]
