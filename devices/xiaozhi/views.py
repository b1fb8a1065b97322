"""The endpoints stock xiaozhi firmware calls (its OTA URL): thin JSON views over
`devices.xiaozhi.services`. Errors are `{"error": message}` with their HTTP status."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST

from common.addresses import address_key
from devices.xiaozhi import services
from devices.xiaozhi.services import OtaError


def _device(request: HttpRequest) -> services.CheckIn:
    declared = request.headers.get("Content-Length", "")
    limit = settings.DEVICE_MAX_MESSAGE_BYTES
    if (declared.isdigit() and int(declared) > limit) or len(request.body) > limit:
        raise OtaError(413, f"The body is larger than {limit} bytes.")
    return services.check_in_from(
        request.headers, request.body, address=address_key(request.META.get("REMOTE_ADDR") or "")
    )


def websocket_url(request: HttpRequest) -> str:
    """`/ws/devices/` as the device reaches the hub: DEVICE_WEBSOCKET_URL, or the host and
    scheme it used for the OTA URL."""
    if settings.DEVICE_WEBSOCKET_URL:
        return settings.DEVICE_WEBSOCKET_URL
    return f"{'wss' if request.is_secure() else 'ws'}://{request.get_host()}/ws/devices/"


@csrf_exempt
@require_http_methods(["GET", "POST"])
def ota(request: HttpRequest) -> JsonResponse:
    try:
        return JsonResponse(services.check_in(_device(request), websocket_url=websocket_url(request)))
    except OtaError as error:
        return JsonResponse({"error": error.message}, status=error.status)


@csrf_exempt
@require_POST
def activate(request: HttpRequest) -> JsonResponse:
    try:
        status, answer = services.activate(_device(request))
    except OtaError as error:
        return JsonResponse({"error": error.message}, status=error.status)
    return JsonResponse(answer, status=status)
