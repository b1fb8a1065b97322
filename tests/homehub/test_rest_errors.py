"""Every REST error answers JSON in the API's error form `{"detail": ...}` (issue 28: a 405
answered plain text), whichever layer refuses: django-ninja, Django's URL resolver, its
middleware or its handler of unexpected failures. The dashboard's own errors stay pages."""

import pytest
from django.test import Client

from tests.hub_support import create_account

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(client, home, make_token):
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {make_token(scopes=['read'])}"
    return client


def _detail(response, status: int) -> str:
    assert response.status_code == status
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert list(body) == ["detail"]
    return body["detail"]


def test_a_method_the_path_does_not_take_is_405_json(api):
    response = api.delete("/api/lights")
    assert _detail(response, 405) == "Method DELETE not allowed here; allowed: GET."
    assert response["Allow"] == "GET"


def test_an_unknown_api_path_is_404_json(api):
    assert _detail(api.get("/api/no-such-thing"), 404) == "Not found: no GET /api/no-such-thing in the API."


def test_a_missing_item_keeps_its_own_detail(api):
    assert "salon-x" in _detail(api.get("/api/lights/salon-x"), 404)


def test_unauthenticated_and_forbidden_are_json(client, home, make_token):
    assert _detail(client.get("/api/lights"), 401).startswith("Authentication required")
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {make_token(scopes=['read'])}"
    assert "'control' scope" in _detail(
        client.patch("/api/alarm", {"armed": True}, content_type="application/json"), 403
    )


def test_a_bad_host_is_400_json(api):
    assert _detail(api.get("/api/lights", HTTP_HOST="evil.example"), 400) == "Bad Request"


@pytest.mark.urls("tests.homehub.rest_errors_urls")
def test_a_failure_outside_the_api_handlers_is_500_json(home, make_token):
    client = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Bearer {make_token()}")
    assert _detail(client.get("/api/failing-outside-ninja"), 500) == "Internal server error."


def test_dashboard_errors_stay_pages(client):
    client.force_login(create_account("maria", "a-long-password-1"))
    response = client.get("/no-such-page/")
    assert response.status_code == 404 and not response["Content-Type"].startswith("application/json")


@pytest.mark.live
def test_a_live_hub_answers_json_errors(daphne_server, make_token):
    """Through daphne (Django's asynchronous path), the same JSON."""
    import httpx

    headers = {"authorization": f"Bearer {make_token(scopes=['read'])}"}
    not_allowed = httpx.delete(daphne_server + "/api/lights", headers=headers)
    assert (not_allowed.status_code, not_allowed.json()) == (
        405,
        {"detail": "Method DELETE not allowed here; allowed: GET."},
    )
    unknown = httpx.get(daphne_server + "/api/nothing-here", headers=headers)
    assert (unknown.status_code, unknown.json()) == (
        404,
        {"detail": "Not found: no GET /api/nothing-here in the API."},
    )
