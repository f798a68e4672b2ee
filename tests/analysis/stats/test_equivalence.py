"""TOST against R ``equivalence::tost`` on the clinic data.

The clinic data ship with R package MultEq (``data(clinic)``: 30 patients, groups ``fact`` 1
and 2, five body measurements). ``equivalence::tost``'s own help example uses a different data
set (``ufc``, epsilon = 1), so the published R output used here is the session Josef Perktold
recorded when checking statsmodels against R: statsmodels/statsmodels,
statsmodels/stats/tests/test_tost.py (objects ``tost_clinic_paired``, ``tost_clinic_paired_1``,
``tost_clinic_indep``, ``tost_clinic_indep_1``, ``tost_clinic_indep_1_pooled``,
``tost_clinic_indep_2_pooled``), all with ``eps = 0.6``. "Paired" there pairs rows 1-15 with
rows 16-30 by position, as R was called with ``clinic$varX[1:15]`` and ``[16:30]``.

Tolerance: R printed 16 significant digits and the algorithm is the same t-test, so 1e-10.
"""

import numpy as np
import pytest
from scipy.stats import t as scipy_t

from apps.analysis.stats.equivalence import tost

R_TOST = {
    # name: (variable, design, mean_diff, ci_diff, df, p_value, R result)
    "tost_clinic_paired": (
        "var2",
        "paired",
        0.5626666666666665,
        (0.1261653305099018, 0.999168002823431),
        14,
        0.4412034046017588,
        "not rejected",
    ),
    "tost_clinic_paired_1": (
        "var1",
        "paired",
        0.1646666666666667,
        (-0.0744336620516462, 0.4037669953849797),
        14,
        0.003166881489265175,
        "rejected",
    ),
    "tost_clinic_indep": (
        "var2",
        "welch",
        0.562666666666666,
        (0.194916250699966, 0.930417082633366),
        24.11000151062728,
        0.4317936812594803,
        "not rejected",
    ),
    "tost_clinic_indep_1": (
        "var1",
        "welch",
        0.1646666666666667,
        (-0.2666862980722534, 0.596019631405587),
        26.7484787582315,
        0.04853083976236974,
        "rejected",
    ),
    "tost_clinic_indep_1_pooled": (
        "var1",
        "pooled",
        0.1646666666666667,
        (-0.2659960620757337, 0.595329395409067),
        28,
        0.04827315100761467,
        "rejected",
    ),
    "tost_clinic_indep_2_pooled": (
        "var2",
        "pooled",
        0.562666666666666,
        (0.1969453064978777, 0.928388026835454),
        28,
        0.43169347692374,
        "not rejected",
    ),
}


@pytest.mark.shared_data
@pytest.mark.parametrize("name", sorted(R_TOST))
def test_tost_matches_r_equivalence_tost_on_clinic(reference_csv, name):
    variable, design, mean_diff, ci, df, p_value, verdict = R_TOST[name]
    clinic = reference_csv("clinic_tost.csv")
    x = clinic.loc[clinic["fact"] == 1, variable].to_numpy()
    y = clinic.loc[clinic["fact"] == 2, variable].to_numpy()
    result = tost(x, y, epsilon=0.6, paired=design == "paired", var_equal=design == "pooled")
    assert result.mean_diff == pytest.approx(mean_diff, rel=1e-10)
    assert result.ci == pytest.approx(ci, rel=1e-10)
    assert result.ci_level == pytest.approx(0.90)
    assert result.df == pytest.approx(df, rel=1e-10)
    assert result.p_value == pytest.approx(p_value, rel=1e-10)
    assert result.p_value == max(result.p_lower, result.p_upper)
    assert result.equivalent is (verdict == "rejected")
    inside = result.ci[0] > -0.6 and result.ci[1] < 0.6
    assert result.equivalent is inside


@pytest.mark.shared_data
def test_one_sample_tost_on_differences_equals_the_paired_tost(reference_csv):
    clinic = reference_csv("clinic_tost.csv")
    x = clinic.loc[clinic["fact"] == 1, "var2"].to_numpy()
    y = clinic.loc[clinic["fact"] == 2, "var2"].to_numpy()
    paired, one_sample = tost(x, y, epsilon=0.6, paired=True), tost(x - y, epsilon=0.6)
    assert one_sample.p_value == pytest.approx(paired.p_value, rel=1e-12)
    assert one_sample.ci == pytest.approx(paired.ci, rel=1e-12)
    assert one_sample.design == "one-sample" and one_sample.n_y is None


def test_the_lower_and_upper_tests_point_the_right_way():
    # A difference sitting near +epsilon fails the upper test, not the lower one.
    x = np.array([0.55, 0.6, 0.58, 0.62, 0.57, 0.61])
    result = tost(x, epsilon=0.6)
    assert result.p_upper > 0.05 > result.p_lower
    assert result.equivalent is False


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"x": [1.0, 2.0], "epsilon": 0.0}, "epsilon must be > 0"),
        ({"x": [1.0, 2.0], "epsilon": 1.0, "alpha": 0.5}, "alpha must be in"),
        ({"x": [1.0], "epsilon": 1.0}, "at least 2 values"),
        ({"x": [1.0, np.nan, 2.0], "epsilon": 1.0}, "missing or non-finite"),
        (
            {"x": [1.0, 2.0], "y": [1.0, 2.0, 3.0], "epsilon": 1.0, "paired": True},
            "differ in length",
        ),
        ({"x": [1.0, 2.0], "epsilon": 1.0, "paired": True}, "paired=True needs y"),
    ],
)
def test_bad_input_raises_a_clear_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tost(**kwargs)


def test_an_asymmetric_margin_gives_the_two_one_sided_t_tests_against_its_bounds():
    # Schuirmann's two one-sided t statistics written out:
    # t_L = (m − lower)/se, t_U = (m − upper)/se.
    x = np.array([0.12, -0.05, 0.2, 0.08, 0.15, 0.03, 0.1, 0.07])
    m, se, df = x.mean(), x.std(ddof=1) / np.sqrt(x.size), x.size - 1
    result = tost(x, margin=(-0.1, 0.3))
    assert result.p_lower == pytest.approx(scipy_t.sf((m + 0.1) / se, df), rel=1e-10)
    assert result.p_upper == pytest.approx(scipy_t.cdf((m - 0.3) / se, df), rel=1e-10)
    assert result.margin == (-0.1, 0.3) and result.epsilon is None
    assert result.equivalent is True
    # The same data against a margin whose upper bound sits inside the interval: not equivalent.
    assert tost(x, margin=(-0.1, 0.12)).equivalent is False
    symmetric = tost(x, epsilon=0.3)
    assert symmetric.to_dict() | {"epsilon": None} == tost(x, margin=(-0.3, 0.3)).to_dict()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"x": [1.0, 2.0]}, "exactly one of epsilon"),
        ({"x": [1.0, 2.0], "epsilon": 1.0, "margin": (-1.0, 1.0)}, "exactly one of epsilon"),
        ({"x": [1.0, 2.0], "margin": (0.1, 1.0)}, "lower < 0 < upper"),
    ],
)
def test_a_margin_must_be_one_and_straddle_zero(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tost(**kwargs)
