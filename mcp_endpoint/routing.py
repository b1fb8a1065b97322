from django.urls import path

from mcp_endpoint.transports.websocket import McpWebSocketConsumer

websocket_urlpatterns = [
    # Channels' URLRouter takes ASGI applications in path(); django-stubs types it for views.
    path("ws/mcp/", McpWebSocketConsumer.as_asgi()),  # type: ignore[arg-type]
]
