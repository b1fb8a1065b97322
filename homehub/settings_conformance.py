"""Settings of a hub that the MCP conformance suite tests: the real settings, plus the test-only
app `tests.conformance_app` with the suite's fixture tools, resources and prompts.

Tests start such a hub with `DJANGO_SETTINGS_MODULE=homehub.settings_conformance`
(docs/MCP_CONFORMANCE.md); a deployment never uses it.
"""

from homehub.settings import *  # noqa: F403
from homehub.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "tests.conformance_app"]
