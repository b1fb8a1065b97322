from django.apps import AppConfig


class ConformanceAppConfig(AppConfig):
    name = "tests.conformance_app"
    label = "conformance_app"
    verbose_name = "MCP conformance fixtures (tests only)"
