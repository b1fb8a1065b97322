from django.apps import AppConfig


class AutomationsConfig(AppConfig):
    """What makes the hub a home: rooms (what each light, sensor zone and agent belongs to),
    scenes, and notifications (the dashboard's copy and the delivery through Apprise, which
    pending approvals use already and the automations engine's `notify` actions will use)."""

    name = "automations"
    label = "automations"
    verbose_name = "Rooms, scenes and notifications"

    def ready(self) -> None:
        from automations import seeding
        from automations.notifications import receivers  # noqa: F401  (notices of pending approvals)
        from automations.resources import WRITE_AUTOMATION, AutomationResources
        from devices.home.signals import home_seeded
        from mcp_endpoint.engine.providers import resources

        home_seeded.connect(seeding.rooms_for_seeded_lights, dispatch_uid="automations.rooms")
        resources.add_provider(AutomationResources())
        resources.add_prompt(WRITE_AUTOMATION)
