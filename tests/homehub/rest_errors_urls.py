"""The hub's URLs plus a plain Django view under /api/ that fails outside django-ninja (for
tests/homehub/test_rest_errors.py's 500)."""

from django.http import HttpRequest, HttpResponse
from django.urls import path

from homehub.urls import urlpatterns as hub_urlpatterns


def _fails(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a failure outside the API's handlers")


urlpatterns = [path("api/failing-outside-ninja", _fails), *hub_urlpatterns]
