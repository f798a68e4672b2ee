"""The general comparison, declared once: its pipeline, report, plot, demo and
design-diagnosis world."""

from apps.analysis.pipelines import register_study_kind
from apps.studies.comparison import pipeline
from apps.studies.comparison.plots import PLOTS
from apps.studies.comparison.world import WORLD

KIND = register_study_kind(
    pipeline, template="comparison", plots=PLOTS, demo="demo_comparison", world=WORLD
)
