from django.apps import AppConfig


class HomehubConfig(AppConfig):
    """The project on top: its commands run the hub (`serve`, `ensure_admin`, `healthz`)."""

    name = "homehub"
    verbose_name = "HomeHub"

    def ready(self) -> None:
        from homehub import checks  # noqa: F401  (registers the checks)
