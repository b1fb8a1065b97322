from django.apps import AppConfig


class TelemetryConfig(AppConfig):
    name = "devices.telemetry"
    label = "telemetry"
    verbose_name = "Telemetry"

    def ready(self) -> None:
        from devices.telemetry.resources import SensorResources
        from mcp_endpoint.engine.providers import resources

        resources.add_provider(SensorResources())
