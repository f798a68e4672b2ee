"""Route choice (seed 002), declared once: its pipeline, report, plots, sub-study gate and
import checks, fixtures in the frozen document, demo and design-diagnosis world."""

from typing import Any

from apps.analysis.pipelines import register_study_kind
from apps.protocols.components import VersionComponent
from apps.studies.paired_blocks import pipeline
from apps.studies.paired_blocks.plots import PLOTS
from apps.studies.paired_blocks.world import WORLD


def _sub_study_sections(document: dict[str, Any]) -> dict[str, Any]:
    return {"sub_study_sections": pipeline.report_sections(document["estimates"])}


KIND = register_study_kind(
    pipeline,
    template="route_choice",
    report_context=_sub_study_sections,
    synthetic=pipeline.synthetic,
    plots=PLOTS,
    components=(
        # The sub-study rules the gate can check without a run, and each import's records.
        VersionComponent(
            name="paired_blocks",
            checks=pipeline.gate_checks,
            import_check=pipeline.import_checks,
        ),
        # The fixtures' hashes in the frozen document: a key only paired_blocks plans have.
        VersionComponent(
            name="route_fixtures",
            document=pipeline.fixtures_document,
            omit_empty_document=True,
        ),
    ),
    demo="demo_route_choice",
    world=WORLD,
)
