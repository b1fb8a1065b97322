"""Property-based tests of the REST API against its own OpenAPI schema (schemathesis):
whatever it is sent, it never answers with a server error. Bounded to a few examples per
operation so the suite stays fast."""

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from tests.fel_support import make_root


@pytest.fixture
def api_schema(db, django_user_model):
    from django.core import signals
    from django.core.wsgi import get_wsgi_application
    from django.db import close_old_connections
    from django.test import Client

    browser = Client()  # the schema is for people who log in
    browser.force_login(django_user_model.objects.create_user("reader", password="pw-for-tests-only"))
    loaded = schemathesis.openapi.from_dict(browser.get("/api/openapi.json").json())
    loaded.app, loaded.location = get_wsgi_application(), "/api/openapi.json"

    # As Django's test client does: requests must not close the test's connection.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield loaded
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.fixture
def token(home, tmp_path, settings, inline_batches):
    from mcp_endpoint.auth.tokens import create_token

    make_root(tmp_path, settings)
    settings.MCP_CONFIRMATION_SECONDS = 0.05  # an alarm change by a token waits for a person: none here
    return create_token(
        "schemathesis", ["read", "control", "fel", "devices"], actor="test", interface="system"
    )[1]


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=6, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
def test_api_never_fails_with_a_server_error(case, token):
    case.call_and_validate(headers={"Authorization": f"Bearer {token}"}, checks=[not_a_server_error])
