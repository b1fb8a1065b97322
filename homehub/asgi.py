"""ASGI entry point (`daphne homehub.asgi:application`).

HTTP: `/mcp` goes straight to the MCP Streamable HTTP app (no Django middleware on the
hot path); everything else to Django. WebSockets: Channels' routes of every app. The
device gateway starts with the process's first connection.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "homehub.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs Django set up first)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from devices.gateway import with_gateway  # noqa: E402
from homehub.routing import websocket_urlpatterns  # noqa: E402
from mcp_endpoint.transports.http import StreamableHttpApp  # noqa: E402

mcp_http_app = StreamableHttpApp()
MCP_PATHS = {"/mcp", "/mcp/"}


async def http_router(scope, receive, send):
    app = mcp_http_app if scope.get("path") in MCP_PATHS else django_asgi_app
    await app(scope, receive, send)


application = with_gateway(
    ProtocolTypeRouter(
        {
            "http": http_router,
            "websocket": AuthMiddlewareStack(URLRouter(websocket_urlpatterns)),
        }
    )
)
