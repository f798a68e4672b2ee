from django.apps import AppConfig


class AnalysisConfig(AppConfig):
    name = "apps.analysis"
    label = "analysis"
    verbose_name = "Analysis"

    def ready(self):
        import apps.analysis.pipelines  # noqa: F401  (registers the built-in pipelines)
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

        # CRUCIBLE's battery manifest: stored as a blob at the freeze, read as the version is.
        from apps.analysis.manifest import manifest_blob_readable, manifest_on_freeze

        register_blob_reader("analysis.crucible_manifest", manifest_blob_readable)
        register_component(VersionComponent(name="crucible_manifest", on_freeze=manifest_on_freeze))
        # Its episode records against the frozen safety-stop conditions and budgets (§8).
        from apps.analysis.crucible_episodes import import_check as crucible_import_check

        register_component(
            VersionComponent(name="crucible_episodes", import_check=crucible_import_check)
        )
        # Seed 002's paired_blocks plans: the sub-study rules the gate can check without a run.
        from apps.analysis.pipelines.paired_blocks import (
            fixtures_document,
            gate_checks,
            import_checks,
        )

        register_component(
            VersionComponent(name="paired_blocks", checks=gate_checks, import_check=import_checks)
        )
        # Its fixtures' hashes in the frozen document: a key only paired_blocks plans have.
        register_component(
            VersionComponent(
                name="route_fixtures", document=fixtures_document, omit_empty_document=True
            )
        )

        from apps.analysis.refs import run_url
        from apps.deviations.refs import register_ref_type

        register_ref_type("analysis_run", run_url)
