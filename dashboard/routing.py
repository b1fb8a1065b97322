from channels.security.websocket import AllowedHostsOriginValidator
from django.urls import path

from dashboard.consumers import HomeConsumer

websocket_urlpatterns = [
    path("ws/home/", AllowedHostsOriginValidator(HomeConsumer.as_asgi())),
]
