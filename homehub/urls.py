from django.contrib import admin
from django.urls import include, path

from dashboard import oauth as dashboard_oauth
from homehub import views
from homehub.api import api
from mcp_endpoint.auth.oauth import views as oauth
from mcp_endpoint.auth.resource_metadata import protected_resource_metadata

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", views.healthz, name="healthz"),
    path("metrics", views.metrics, name="metrics"),
    path(".well-known/oauth-protected-resource", protected_resource_metadata, name="oauth-resource"),
    path(".well-known/oauth-protected-resource/mcp", protected_resource_metadata, name="oauth-resource-mcp"),
    path(".well-known/oauth-authorization-server", oauth.authorization_server_metadata, name="oauth-server"),
    path("oauth/authorize", dashboard_oauth.authorize, name="oauth-authorize"),
    path("oauth/token", oauth.token, name="oauth-token"),
    path("oauth/register", oauth.register, name="oauth-register"),
    path("oauth/revoke", oauth.revoke, name="oauth-revoke"),
    path("api/", api.urls),
    path("xiaozhi/", include("devices.xiaozhi.urls")),
    path("", include("dashboard.urls")),
]
