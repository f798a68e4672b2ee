"""XSTest, declared once: its pipeline, report, plot and demo."""

from apps.analysis.pipelines import register_study_kind
from apps.studies.xstest import pipeline
from apps.studies.xstest.plots import PLOTS

KIND = register_study_kind(pipeline, template="xstest", plots=PLOTS, demo="demo_xstest")
