from django.contrib import admin
from django.urls import include, path

from homehub import views
from homehub.api import api
from mcp_endpoint.views import protected_resource_metadata

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", views.healthz, name="healthz"),
    path("metrics", views.metrics, name="metrics"),
    path(".well-known/oauth-protected-resource", protected_resource_metadata),
    path(".well-known/oauth-protected-resource/mcp", protected_resource_metadata),
    path("api/", api.urls),
    path("xiaozhi/", include("devices.xiaozhi.urls")),
    path("", include("dashboard.urls")),
]
