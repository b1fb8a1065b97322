"""OAuth 2.0 protected-resource metadata (RFC 9728) for `/mcp`."""

from django.http import HttpRequest, JsonResponse

from mcp_endpoint.scopes import scopes


def protected_resource_metadata(request: HttpRequest) -> JsonResponse:
    base = f"{request.scheme}://{request.get_host()}"
    return JsonResponse(
        {
            "resource": f"{base}/mcp",
            "resource_name": "HomeHub MCP",
            "authorization_servers": [],
            "bearer_methods_supported": ["header"],
            "scopes_supported": list(scopes.names()),
        }
    )
