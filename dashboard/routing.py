from django.conf import settings
from django.urls import path

from common.origins import same_origin_websocket
from dashboard.consumers import HomeConsumer

websocket_urlpatterns = [
    # The owner's session cookie rides along with any page's WebSocket: only the hub's own
    # pages (same scheme, host and port), or the public origins it is served at, may open it.
    # Channels' URLRouter takes ASGI applications in path(); django-stubs types it for views.
    path(
        "ws/home/",
        same_origin_websocket(HomeConsumer.as_asgi(), lambda: settings.CSRF_TRUSTED_ORIGINS),  # type: ignore[arg-type]
    ),
]
