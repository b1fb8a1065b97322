"""Test-only app: the fixtures the MCP conformance suite expects (never installed by default).

homehub/settings.py adds it to INSTALLED_APPS only when HOMEHUB_CONFORMANCE=1, which
tests/test_mcp_conformance.py sets for the daphne it starts.
"""
