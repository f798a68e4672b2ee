from django.apps import AppConfig


class ResponsesConfig(AppConfig):
    name = "apps.responses"
    label = "responses"
    verbose_name = "Responses"

    def ready(self):
        from apps.protocols.components import register_component
        from apps.responses.components import RESPONSES_COMPONENT

        register_component(RESPONSES_COMPONENT)
