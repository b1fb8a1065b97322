from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Homeowner's dashboard"

    def ready(self) -> None:
        from dashboard import lockouts  # noqa: F401  (audits login lockouts)
