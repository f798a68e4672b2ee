"""CRUCIBLE (seed 001), declared once: its pipeline, report, plots, battery manifest, episode
checks, demo and design-diagnosis world."""

from apps.analysis.pipelines import RecordTerms, register_study_kind
from apps.protocols.blobs import register_blob_reader
from apps.protocols.components import VersionComponent
from apps.studies.crucible import pipeline
from apps.studies.crucible.episodes import RECORD_FIELDS, import_check, record_terms
from apps.studies.crucible.manifest import manifest_blob_readable, manifest_on_freeze
from apps.studies.crucible.plots import PLOTS
from apps.studies.crucible.world import WORLD

KIND = register_study_kind(
    pipeline,
    template="crucible",
    plots=PLOTS,
    components=(
        # The battery manifest: stored as a blob at the freeze, read as the version is.
        VersionComponent(name="crucible_manifest", on_freeze=manifest_on_freeze),
        # Episode records against the frozen safety-stop conditions and budgets (§8).
        VersionComponent(name="crucible_episodes", import_check=import_check),
        # No percentile interval for a design of fewer families than it covers with (#36 §3).
        VersionComponent(name="crucible_interval", checks=pipeline.gate_checks),
    ),
    # What an episode used of its budgets and the safety stop it names (§8).
    record_terms=RecordTerms(fields=RECORD_FIELDS, terms=record_terms),
    demo="demo_crucible",
    world=WORLD,
)
register_blob_reader("analysis.crucible_manifest", manifest_blob_readable)
