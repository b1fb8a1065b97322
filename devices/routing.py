from django.urls import path

from devices.consumers import DeviceConsumer

websocket_urlpatterns = [
    path("ws/devices/", DeviceConsumer.as_asgi()),
]
