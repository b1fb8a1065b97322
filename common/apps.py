from django.apps import AppConfig


class CommonConfig(AppConfig):
    """What every app of the hub shares and none owns: the change feed across processes, channel-layer
    group helpers, the REST scope check."""

    name = "common"
    label = "common"
    verbose_name = "Shared"
    default_auto_field = "django.db.models.BigAutoField"
