from django.apps import AppConfig


class DevicesConfig(AppConfig):
    """The history of the schema from before the split by concern: migrations 0001-0005
    created the tables the apps under `devices/` now own (they keep their `devices_` names),
    and 0006 hands the models over to those apps. No models or code of its own."""

    name = "devices"
    verbose_name = "Devices (schema history)"
