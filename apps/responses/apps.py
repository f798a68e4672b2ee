from django.apps import AppConfig


class ResponsesConfig(AppConfig):
    name = "apps.responses"
    label = "responses"
    verbose_name = "Responses"
