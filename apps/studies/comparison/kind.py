"""The general comparison, declared once: its pipeline, report and plot."""

from apps.analysis.pipelines import register_study_kind
from apps.studies.comparison import pipeline
from apps.studies.comparison.plots import PLOTS

KIND = register_study_kind(pipeline, template="comparison", plots=PLOTS, demo="demo_comparison")
