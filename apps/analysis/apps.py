from django.apps import AppConfig


class AnalysisConfig(AppConfig):
    name = "apps.analysis"
    label = "analysis"
    verbose_name = "Analysis"

    def ready(self):
        from apps.analysis.computability import computability_checks, computability_notes
        from apps.analysis.selectors import analysis_blob_readable
        from apps.protocols.blobs import register_blob_reader
        from apps.protocols.components import VersionComponent, register_component

        # Inputs and results are blobs too: served by hash only once the outcomes are unsealed.
        register_blob_reader("analysis.run", analysis_blob_readable)

        # The computability gate: the plan's own pipeline on synthetic data of the draft.
        register_component(
            VersionComponent(
                name="analysis", final_checks=computability_checks, notes=computability_notes
            )
        )

        # The design diagnosis (issue #35): the draft's latest one is part of its frozen
        # document; its blob is read as the version's documents are.
        from apps.analysis.diagnosis.selectors import (
            diagnosis_blob_readable,
            diagnosis_document_part,
        )

        register_blob_reader("analysis.diagnosis", diagnosis_blob_readable)
        register_component(
            VersionComponent(
                name="design_diagnosis",
                document=diagnosis_document_part,
                omit_empty_document=True,
            )
        )

        from apps.analysis.refs import run_url
        from apps.deviations.refs import register_ref_type

        register_ref_type("analysis_run", run_url)

        # Judge validation (issue 34 §5): a section and a plot on every kind's report, and the
        # same figures on the scoring dashboard once the outcomes are unsealed.
        from apps.analysis import judge
        from apps.analysis.pipelines import SharedReport, register_shared_report
        from apps.raters.final import register_dashboard_part

        register_shared_report(SharedReport("judge_validation", judge.REPORT, judge.PLOTS))
        register_dashboard_part("validation", judge.dashboard_validation)
