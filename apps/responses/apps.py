from django.apps import AppConfig


class ResponsesConfig(AppConfig):
    name = "apps.responses"
    label = "responses"
    verbose_name = "Responses"

    def ready(self):
        from apps.deviations.refs import register_ref_type
        from apps.protocols.components import register_component
        from apps.responses.components import RESPONSES_COMPONENT
        from apps.responses.refs import attempt_url, import_url

        register_component(RESPONSES_COMPONENT)
        register_ref_type("attempt", attempt_url)
        register_ref_type("import", import_url)
