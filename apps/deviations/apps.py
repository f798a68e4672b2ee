from django.apps import AppConfig


class DeviationsConfig(AppConfig):
    name = "apps.deviations"
    label = "deviations"
    verbose_name = "Deviation log"
