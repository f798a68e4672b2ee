from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo that ``make run`` loads. It depends on every other app; nothing depends on it."""

    name = "apps.demo"
    label = "demo"
    verbose_name = "Demo"
