"""XSTest, declared once: its pipeline, report, plot, demo and design-diagnosis world."""

from apps.analysis.pipelines import register_study_kind
from apps.studies.xstest import pipeline
from apps.studies.xstest.plots import PLOTS
from apps.studies.xstest.world import WORLD

KIND = register_study_kind(
    pipeline, template="xstest", plots=PLOTS, demo="demo_xstest", world=WORLD
)
