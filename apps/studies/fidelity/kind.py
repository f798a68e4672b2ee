"""Injection fidelity (seed 003), declared once: its pipeline (with its plan template), rubric
preset, report, plot, the rules of its judged signals (the raters' ``signals`` fields), its judge
import, demo and design-diagnosis world."""

from apps.analysis.pipelines import register_study_kind
from apps.raters.judged import JudgedSignals, register_judged_signals
from apps.raters.rubric_templates import register_rubric_template
from apps.studies.fidelity import pipeline, verdicts
from apps.studies.fidelity.judge_import import fidelity_judge_import, judged_by_scorer
from apps.studies.fidelity.plots import PLOTS
from apps.studies.fidelity.rubric import RUBRIC
from apps.studies.fidelity.world import WORLD

KIND = register_study_kind(
    pipeline, template="fidelity", plots=PLOTS, demo="demo_fidelity", world=WORLD
)
register_judged_signals(
    JudgedSignals(
        card=verdicts.Card.from_dict,
        error=verdicts.FidelityInputError,
        problems=verdicts.signals_problems,
        verdict=verdicts.derive_verdict,
        schema=verdicts.loss1_schema,
        axes=verdicts.AXES,
        synthetic=verdicts.synthetic_signals,
        judged_by_scorer=judged_by_scorer,
        judge_import=fidelity_judge_import,
    )
)
register_rubric_template(RUBRIC)
