"""Test-only app: the fixtures the MCP conformance suite expects (never installed by default).

`homehub.settings_conformance` installs it; tests/mcp_endpoint/test_mcp_conformance.py and
tests/mcp_endpoint/test_mcp_client_requests_live.py start their daphne with
DJANGO_SETTINGS_MODULE=homehub.settings_conformance.
"""
