from django.apps import AppConfig


class AutomationsConfig(AppConfig):
    """What the home does by itself. For now its notifications (`automations.notifications`):
    the dashboard's copy and the delivery through Apprise, which the automations engine's
    `notify` actions and alarm trips will use, and which pending approvals use already."""

    name = "automations"
    label = "automations"
    verbose_name = "Automations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from automations.notifications import receivers  # noqa: F401  (notices of pending approvals)
