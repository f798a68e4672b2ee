from django.apps import AppConfig


class AnalysisConfig(AppConfig):
    name = "apps.analysis"
    label = "analysis"
    verbose_name = "Analysis"

    def ready(self):
        import apps.analysis.pipelines  # noqa: F401  (registers the built-in pipelines)

        try:
            from apps.protocols.blobs import register_blob_reader
        except ImportError:  # the blob endpoint has not landed on this branch yet
            return
        from apps.analysis.selectors import analysis_blob_readable

        register_blob_reader("analysis.run", analysis_blob_readable)
