"""The diagnosands checked against analytic results (issue #35, "Checked by"), on designs
declared in the test itself: nothing here reads our pipelines, only the diagnosis engine."""

import re

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import NormalIndPower, TTestIndPower
from statsmodels.stats.proportion import proportion_effectsize, proportions_ztest

from apps.analysis.diagnosis.diagnosands import (
    DiagnosisCancelled,
    Draw,
    Simulation,
    diagnosands,
    simulate,
)


def _two_arm(effect: float, n: int = 100):
    """DeclareDesign's README design: N units, complete random assignment of half to
    treatment, Y = effect · Z + N(0, 1); the answer is the difference in means with a Welch
    interval (lm_robust's HC2 interval for one binary regressor)."""

    def run_once(rng: np.random.Generator, i: int) -> Simulation:
        z = rng.permutation(np.repeat([0, 1], n // 2))
        y = effect * z + rng.standard_normal(n)
        treated, control = y[z == 1], y[z == 0]
        test = stats.ttest_ind(treated, control, equal_var=False)
        low, high = test.confidence_interval(0.95)
        return Simulation(
            draws=[
                Draw(
                    "ate",
                    float(treated.mean() - control.mean()),
                    estimand=effect,
                    low=float(low),
                    high=float(high),
                    significant=bool(test.pvalue < 0.05),
                )
            ]
        )

    return run_once


def _within(found: dict, expected: float, k: float = 2.0) -> bool:
    return abs(found["value"] - expected) <= k * found["se"]


def test_declaredesign_readme_two_arm_power_and_coverage():
    """N = 100, effect 0.2, σ = 1: power 0.17 (TTestIndPower: 0.168) and coverage 0.95."""
    sims = simulate(_two_arm(0.2), sims=1000, seed=20260101)
    result = diagnosands(sims, seed=1)["estimates"]["ate"]
    analytic = TTestIndPower().power(effect_size=0.2, nobs1=50, alpha=0.05, ratio=1.0)
    assert analytic == pytest.approx(0.17, abs=0.005)
    assert _within(result["power"], analytic), result["power"]
    assert _within(result["coverage"], 0.95), result["coverage"]
    # The estimator is unbiased: bias 0 within 2 MC SE, and its SD is σ·sqrt(4/N) = 0.2.
    assert _within(result["bias"], 0.0), result["bias"]
    assert result["sd_estimate"]["value"] == pytest.approx(0.2, rel=0.1)
    # RMSE² = bias² + variance: the RMSE of an unbiased estimator is its SD.
    assert result["rmse"]["value"] == pytest.approx(result["sd_estimate"]["value"], rel=0.02)


def test_two_proportion_power_matches_statsmodels():
    p_control, p_treated, n = 0.30, 0.42, 200

    def run_once(rng: np.random.Generator, i: int) -> Simulation:
        counts = np.array([rng.binomial(n, p_treated), rng.binomial(n, p_control)])
        _, pvalue = proportions_ztest(counts, np.array([n, n]))
        diff = (counts[0] - counts[1]) / n
        return Simulation(
            draws=[Draw("diff", diff, estimand=p_treated - p_control, significant=pvalue < 0.05)]
        )

    result = diagnosands(simulate(run_once, sims=1000, seed=7), seed=2)["estimates"]["diff"]
    h = proportion_effectsize(p_treated, p_control)
    analytic = NormalIndPower().power(effect_size=h, nobs1=n, alpha=0.05, ratio=1.0)
    assert _within(result["power"], analytic), (result["power"], analytic)
    assert _within(result["bias"], 0.0)


def test_type_s_rate_under_a_tiny_effect_is_large_and_zero_under_a_large_one():
    """Gelman and Carlin (2014): with a true effect of D = 0.1 standard errors the type-S rate
    among significant results is Φ(−1.96 − D) / (Φ(−1.96 − D) + 1 − Φ(1.96 − D)) ≈ 0.39; a
    large effect has none."""
    tiny = diagnosands(simulate(_two_arm(0.02), sims=1000, seed=3), seed=3)
    d = 0.02 / 0.2  # the estimate's SE is sqrt(4 / N) = 0.2
    wrong, right = stats.norm.cdf(-1.96 - d), stats.norm.sf(1.96 - d)
    assert _within(tiny["estimates"]["ate"]["type_s_rate"], wrong / (wrong + right), 3)
    large = diagnosands(simulate(_two_arm(1.0), sims=200, seed=3), seed=3)
    assert large["estimates"]["ate"]["type_s_rate"]["value"] == 0.0
    assert large["estimates"]["ate"]["power"]["value"] > 0.99


def test_reproducible_from_the_seed_and_cancellable():
    first = diagnosands(simulate(_two_arm(0.2), sims=50, seed=9), seed=9)
    again = diagnosands(simulate(_two_arm(0.2), sims=50, seed=9), seed=9)
    other = diagnosands(simulate(_two_arm(0.2), sims=50, seed=10), seed=9)
    assert first == again
    assert first != other
    calls = []
    with pytest.raises(DiagnosisCancelled):
        simulate(
            _two_arm(0.2),
            sims=50,
            seed=9,
            cancelled=lambda: len(calls) > 3,
            progress=lambda p, m: calls.append(p),
        )
    assert len(calls) == 4


def test_findings_not_evaluable_and_contradictory_shares():
    from apps.analysis.diagnosis.diagnosands import Stage

    def run_once(rng: np.random.Generator, i: int) -> Simulation:
        u = rng.random()
        if u < 0.2:
            stage = Stage("", (), False, False)
        elif u < 0.3:
            stage = Stage("", ("A", "B"), True, True)
        else:
            stage = Stage("", ("A",), True, False)
        return Simulation(stages=[stage])

    result = diagnosands(simulate(run_once, sims=2000, seed=4), seed=4)["stages"][""]
    # Four shares checked at once: 3 MC SE each keeps the family's error rate near 1 %.
    assert _within(result["not_evaluable"], 0.2, 3)
    assert _within(result["contradictory"], 0.1, 3)
    assert _within(result["finding:A"], 0.8, 3)
    assert _within(result["finding:B"], 0.1, 3)


def test_a_biased_estimate_is_warned_and_an_unbiased_one_is_not():
    from apps.analysis.diagnosis.engine import diagnosis_warnings

    def run_once(rng: np.random.Generator, i: int) -> Simulation:
        noise = 0.01 * rng.standard_normal(2)
        return Simulation(
            draws=[
                Draw("shifted", 0.3 + noise[0], estimand=0.0),  # bias 0.3, MC SE ≈ 0.001
                Draw("centred", noise[1], estimand=0.0),
            ]
        )

    point = diagnosands(simulate(run_once, sims=100, seed=4), seed=4)
    warned = " ".join(diagnosis_warnings(point))
    # 0.3 within a few MC SE (0.001), printed to 3 significant digits.
    assert re.search(
        r"shifted: its estimate misses the planted value by \+0\.(29[6-9]|30[0-4]?) ", warned
    )
    assert "centred" not in warned
