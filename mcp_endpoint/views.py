"""OAuth 2.0 protected-resource metadata (RFC 9728) for `/mcp`: the hub is its own
authorization server (`mcp_endpoint.oauth`)."""

from django.http import HttpRequest, JsonResponse

from mcp_endpoint.oauth.resources import hub_resource
from mcp_endpoint.oauth.views import issuer
from mcp_endpoint.scopes import scopes


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
