"""WebSocket routes of every app, gathered in one list for the ASGI router."""

from dashboard.routing import websocket_urlpatterns as dashboard_routes
from devices.xiaozhi.routing import websocket_urlpatterns as device_routes
from mcp_endpoint.routing import websocket_urlpatterns as mcp_routes

websocket_urlpatterns: list = [*mcp_routes, *device_routes, *dashboard_routes]
