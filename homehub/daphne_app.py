"""Daphne's app, as the hub installs it."""

from django.apps import AppConfig


class DaphneConfig(AppConfig):
    """Daphne's `runserver` (HTTP and WebSockets through the ASGI application), without what
    daphne's own app config does when imported: import its server, which installs Twisted's
    reactor, and register a check that imports it again. That cost every command about 150 ms
    of CPU at start, `mcp_stdio` (whose client waits for it) included, for a server that only
    `serve`, `runserver` and the `daphne` command run, and each of them imports it first
    itself. The check (daphne before `django.contrib.staticfiles`, so that its `runserver`
    wins) is the order of INSTALLED_APPS in settings.py."""

    name = "daphne"
    verbose_name = "Daphne"
