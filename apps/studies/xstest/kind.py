"""XSTest, declared once: its pipeline (with its plan template), rubric preset, report, plot, demo
and design-diagnosis world."""

from apps.analysis.pipelines import register_study_kind
from apps.raters.rubric_templates import register_rubric_template
from apps.studies.xstest import pipeline
from apps.studies.xstest.plots import PLOTS
from apps.studies.xstest.rubric import RUBRIC
from apps.studies.xstest.world import WORLD

KIND = register_study_kind(
    pipeline, template="xstest", plots=PLOTS, demo="demo_xstest", world=WORLD
)
register_rubric_template(RUBRIC)
