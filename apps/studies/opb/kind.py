"""OPB-01, declared once: its pipeline (with its plan template), rubric preset, report, plots,
design checks, demo and diagnosis world."""

from apps.analysis.pipelines import register_study_kind
from apps.items.design_checks import register_design_check
from apps.raters.rubric_templates import register_rubric_template
from apps.studies.opb import pipeline
from apps.studies.opb.disclosure import disclosure_problems
from apps.studies.opb.plots import PLOTS
from apps.studies.opb.rubric import RUBRIC
from apps.studies.opb.world import WORLD

KIND = register_study_kind(
    pipeline,
    template="opb",
    warnings_of=pipeline.decision_contradictions,
    deviations_of=pipeline.reliability_deviations,
    plots=PLOTS,
    demo="load_demo",
    world=WORLD,
)
register_rubric_template(RUBRIC)
# OPB-01 §5: a disclosure item names its base item; a sham matches its inscription.
register_design_check("opb_disclosure", disclosure_problems)
