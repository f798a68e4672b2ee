from django.apps import AppConfig


class RatersConfig(AppConfig):
    name = "apps.raters"
    label = "raters"
    verbose_name = "Blind rating"

    def ready(self) -> None:
        from apps.raters.components import register

        register()
