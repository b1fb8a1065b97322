"""The hub's own system checks."""

from homehub.checks import allowed_origins_are_origins


def test_an_allowed_origin_that_is_no_origin_is_named(settings):
    settings.MCP_ALLOWED_ORIGINS = ["agent.example", "https://ok.example", "https://ok.example:8443/"]
    warnings = allowed_origins_are_origins()
    assert [w.id for w in warnings] == ["homehub.W002"] and "'agent.example'" in warnings[0].msg
