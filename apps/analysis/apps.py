from django.apps import AppConfig


class AnalysisConfig(AppConfig):
    name = "apps.analysis"
    label = "analysis"
    verbose_name = "Analysis"

    def ready(self):
        import apps.analysis.pipelines  # noqa: F401  (registers the built-in pipelines)
        from apps.analysis.selectors import analysis_blob_readable
        from apps.protocols.blobs import register_blob_reader

        # Inputs and results are blobs too: served by hash only once the outcomes are unsealed.
        register_blob_reader("analysis.run", analysis_blob_readable)

        from apps.analysis.refs import run_url
        from apps.deviations.refs import register_ref_type

        register_ref_type("analysis_run", run_url)
