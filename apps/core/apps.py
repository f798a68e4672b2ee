from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "apps.core"
    label = "core"
    verbose_name = "Core"

    def ready(self) -> None:
        # Connects the health check without a round trip (connection_created).
        from apps.core import dbhealth  # noqa: F401
