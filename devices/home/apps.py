from django.apps import AppConfig


class HomeConfig(AppConfig):
    name = "devices.home"
    label = "home"
    verbose_name = "Home"

    def ready(self) -> None:
        from devices.home.resources import HOME_SUMMARY, HomeResources
        from mcp_endpoint.engine.providers import resources

        resources.add_provider(HomeResources())
        resources.add_prompt(HOME_SUMMARY)
