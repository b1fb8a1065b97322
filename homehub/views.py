"""Operations endpoints: `/healthz` for probes and load balancers, `/metrics` for Prometheus."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST

from homehub import health
from homehub import metrics as prometheus


@never_cache
@require_GET
async def healthz(request: HttpRequest) -> JsonResponse:
    """200 when this process can serve (`?full=1`: when every dependency is up), else 503 naming
    what is down. No login, no secrets."""
    result = await health.report(full=request.GET.get("full", "") not in {"", "0"})
    return JsonResponse(result, status=503 if result["down"] else 200)


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus metrics: for `Authorization: Bearer <METRICS_TOKEN>`, or anyone with
    METRICS_PUBLIC; closed (403) with neither."""
    if prometheus.closed():
        return HttpResponse(
            "metrics are closed: set METRICS_TOKEN (scrapers send Authorization: Bearer <token>) "
            "or METRICS_PUBLIC=1\n",
            status=403,
            content_type="text/plain",
        )
    if not prometheus.authorized(request.headers.get("authorization")):
        response = HttpResponse(
            "metrics need Authorization: Bearer <METRICS_TOKEN>\n", status=401, content_type="text/plain"
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(prometheus.exposition(), content_type=CONTENT_TYPE_LATEST)
