from django.urls import path

from devices.xiaozhi.websocket import DeviceConsumer

websocket_urlpatterns = [
    path("ws/devices/", DeviceConsumer.as_asgi()),  # type: ignore[arg-type]
]
