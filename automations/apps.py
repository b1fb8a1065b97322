from django.apps import AppConfig


class AutomationsConfig(AppConfig):
    name = "automations"
    label = "automations"
    verbose_name = "Rooms and scenes"

    def ready(self) -> None:
        from automations import seeding
        from devices.home.signals import home_seeded

        home_seeded.connect(seeding.rooms_for_seeded_lights, dispatch_uid="automations.rooms")
