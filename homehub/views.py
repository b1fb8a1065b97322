"""Operations endpoints: `/healthz` for probes and load balancers, `/metrics` for Prometheus."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from homehub import health


@never_cache
@require_GET
async def healthz(request: HttpRequest) -> JsonResponse:
    """200 when everything configured is up, 503 naming what is down. No login, no secrets."""
    result = await health.report()
    return JsonResponse(result, status=503 if result["down"] else 200)
