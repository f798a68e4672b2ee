from django.apps import AppConfig


class RatersConfig(AppConfig):
    name = "apps.raters"
    label = "raters"
    verbose_name = "Blind rating"

    def ready(self) -> None:
        from apps.deviations.refs import register_ref_type
        from apps.raters.components import register
        from apps.raters.refs import scorers_url

        register()
        register_ref_type("machine_score_import", scorers_url)
        register_ref_type("oracle_run", scorers_url)
