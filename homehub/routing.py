"""WebSocket routes of every app, gathered in one list for the ASGI router."""

from mcp_endpoint.routing import websocket_urlpatterns as mcp_routes

websocket_urlpatterns: list = [*mcp_routes]
