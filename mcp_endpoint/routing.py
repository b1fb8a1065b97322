from django.urls import path

from mcp_endpoint.transports.websocket import McpWebSocketConsumer

websocket_urlpatterns = [
    path("ws/mcp/", McpWebSocketConsumer.as_asgi()),
]
