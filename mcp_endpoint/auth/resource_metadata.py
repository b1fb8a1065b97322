"""OAuth 2.0 protected-resource metadata (RFC 9728) for `/mcp`: the hub is its own
authorization server (`mcp_endpoint.auth.oauth`)."""

from django.http import HttpRequest, JsonResponse

from mcp_endpoint.auth.oauth.resource_indicators import hub_resource
from mcp_endpoint.auth.oauth.views import issuer
from mcp_endpoint.auth.scopes import scopes


def protected_resource_metadata(request: HttpRequest) -> JsonResponse:
    base = issuer(request)
    return JsonResponse(
        {
            "resource": hub_resource(base),
            "resource_name": "HomeHub MCP",
            "authorization_servers": [base],
            "bearer_methods_supported": ["header"],
            "scopes_supported": list(scopes.names()),
        }
    )
