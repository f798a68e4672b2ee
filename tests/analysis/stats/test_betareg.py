"""Beta regression against R betareg's published output.

Sources:
- [Rout] cran/betareg, tests/vignette-betareg.Rout.save (R 2.13.2): the saved R output of the
  code in Cribari-Neto & Zeileis (2010), "Beta Regression in R", J. Stat. Softw. 34(2),
  sections 4.1 (GasolineYield), 4.2 (FoodExpenditure) and 5 (ReadingSkills).
- [SM] statsmodels, statsmodels/othermod/tests/test_beta.py and results/results_betareg.py:
  R betareg output recorded by statsmodels for FoodExpenditure and the methylation data.

Tolerance: R prints 4–7 significant digits; both fits stop at the same maximum of the
likelihood (our BFGS + Newton against R's BFGS + Fisher scoring), so we match each published
number to within half a unit of its last printed digit, stated per test.
"""

import numpy as np
import pandas as pd
import pytest

from apps.analysis.stats.betareg import fit_beta_regression, squeeze_unit_interval


def _close(actual: dict, expected: dict, atol: float) -> None:
    assert actual.keys() == expected.keys()
    for name, value in expected.items():
        assert actual[name] == pytest.approx(value, abs=atol), name


@pytest.mark.shared_data
def test_food_expenditure_matches_r_betareg(reference_csv):
    # betareg(I(food/income) ~ income + persons, data = FoodExpenditure), [SM] and [Rout];
    # the paper prints (Intercept) -0.62255, income -0.01230, persons 0.11846, phi 35.60975.
    fit = fit_beta_regression(
        reference_csv("FoodExpenditure.csv"), "I(food/income) ~ income + persons"
    )
    assert fit.converged
    _close(
        fit.coefficients,
        {"Intercept": -0.62254806, "income": -0.01229884, "persons": 0.11846210},
        5e-8,
    )
    _close(
        fit.std_errors,
        {"Intercept": 0.223853539, "income": 0.003035585, "persons": 0.035340667},
        5e-9,
    )
    assert fit.phi == pytest.approx(35.60975, abs=5e-6)
    assert fit.phi_std_error == pytest.approx(8.079598, abs=5e-7)
    assert fit.log_likelihood == pytest.approx(45.334, abs=5e-4)  # lrtest, [Rout]
    assert fit.n == 38


@pytest.mark.shared_data
def test_gasoline_yield_matches_r_betareg(reference_csv):
    # betareg(yield ~ batch + temp, data = GasolineYield), [Rout]. R names the coefficients
    # batch1 ... batch9, so batch 10 is R's reference level (not batch 1). The CSV keeps R's
    # labels (rows 1-4 are batch 1, the largest coefficient), so we make 10 the first level.
    gy = reference_csv("GasolineYield.csv").rename(columns={"yield": "gas_yield"})
    gy["batch"] = pd.Categorical(gy["batch"], categories=[10, *range(1, 10)])
    fit = fit_beta_regression(gy, "gas_yield ~ batch + temp")
    assert fit.converged
    published = {
        "Intercept": (-6.1595710, 0.1823247),
        "batch[T.1]": (1.7277289, 0.1012294),
        "batch[T.2]": (1.3225969, 0.1179020),
        "batch[T.3]": (1.5723099, 0.1161045),
        "batch[T.4]": (1.0597141, 0.1023598),
        "batch[T.5]": (1.1337518, 0.1035232),
        "batch[T.6]": (1.0401618, 0.1060365),
        "batch[T.7]": (0.5436922, 0.1091275),
        "batch[T.8]": (0.4959007, 0.1089257),
        "batch[T.9]": (0.3857930, 0.1185933),
        "temp": (0.0109669, 0.0004126),
    }
    _close(fit.coefficients, {k: v[0] for k, v in published.items()}, 5e-8)
    _close(fit.std_errors, {k: v[1] for k, v in published.items()}, 5e-8)
    assert fit.phi == pytest.approx(440.2784, abs=5e-5)  # coef(gy_logit, "precision")
    assert fit.phi_std_error == pytest.approx(110.0, abs=0.05)
    assert fit.log_likelihood == pytest.approx(84.798, abs=5e-4)


@pytest.mark.shared_data
def test_reading_skills_precision_model_matches_r_betareg(reference_csv):
    # betareg(accuracy ~ dyslexia * iq | dyslexia + iq, hessian = TRUE), [Rout]. R codes
    # dyslexia with sum contrasts; +1 for "yes", -1 for "no" reproduces the published signs.
    # hessian = TRUE means standard errors from the observed information.
    rs = reference_csv("ReadingSkills.csv")
    rs["dyslexia"] = np.where(rs["dyslexia"] == "yes", 1.0, -1.0)
    fit = fit_beta_regression(
        rs, "accuracy ~ dyslexia * iq", "~ dyslexia + iq", information="observed"
    )
    assert fit.converged and fit.phi is None
    _close(
        fit.coefficients,
        {"Intercept": 1.1232, "dyslexia": -0.7416, "iq": 0.4864, "dyslexia:iq": -0.5813},
        5e-5,
    )
    _close(
        fit.std_errors,
        {"Intercept": 0.1509, "dyslexia": 0.1515, "iq": 0.1671, "dyslexia:iq": 0.1726},
        5e-5,
    )
    _close(
        fit.precision_coefficients, {"Intercept": 3.3044, "dyslexia": 1.7466, "iq": 1.2291}, 5e-5
    )
    _close(fit.precision_std_errors, {"Intercept": 0.2265, "dyslexia": 0.2940, "iq": 0.4596}, 5e-5)
    assert fit.log_likelihood == pytest.approx(65.9, abs=0.05)


@pytest.mark.shared_data
def test_methylation_log_precision_model_matches_r_betareg(reference_csv):
    # betareg(methylation ~ gender + CpG | age, link.phi = "log"), [SM] results_betareg.py
    # (R values to 15 digits); tolerance 1e-6 relative.
    fit = fit_beta_regression(
        reference_csv("methylation-test.csv"), "methylation ~ gender + CpG", "~ age"
    )
    expected_mean = {
        "Intercept": 1.44224319715775,
        "gender[T.M]": 0.0698572427112336,
        "CpG[T.CpG_1]": 0.607345321898288,
        "CpG[T.CpG_2]": 0.973547608125426,
    }
    expected_se = {
        "Intercept": 0.0340120810079364,
        "gender[T.M]": 0.0435912797271355,
        "CpG[T.CpG_1]": 0.0483424930413969,
        "CpG[T.CpG_2]": 0.0531104241011462,
    }
    for name, value in expected_mean.items():
        assert fit.coefficients[name] == pytest.approx(value, rel=1e-6)
        assert fit.std_errors[name] == pytest.approx(expected_se[name], rel=1e-6)
    assert fit.precision_coefficients == pytest.approx(
        {"Intercept": 8.22828526376512, "age": -0.0347054296138766}, rel=1e-6
    )
    assert fit.precision_std_errors == pytest.approx(
        {"Intercept": 1.79098056245575, "age": 0.0327648100640521}, rel=1e-6
    )
    assert fit.log_likelihood == pytest.approx(104.148028405343, rel=1e-9)


@pytest.mark.shared_data
def test_result_is_json_serialisable(reference_csv):
    from apps.core.canonical import canonical_json

    fit = fit_beta_regression(
        reference_csv("FoodExpenditure.csv"), "I(food/income) ~ income + persons"
    )
    assert b'"phi":35.6097503' in canonical_json(fit.to_dict())


def test_squeeze_follows_smithson_and_verkuilen():
    # (y (n - 1) + 1/2) / n with n = 3: 0 -> 1/6, 1/2 -> 1/2, 1 -> 5/6.
    np.testing.assert_allclose(squeeze_unit_interval([0.0, 0.5, 1.0]), [1 / 6, 0.5, 5 / 6])
    np.testing.assert_allclose(squeeze_unit_interval([0.0], n=100), [0.005])


def test_squeeze_keeps_the_order_of_responses():
    y = np.array([0.0, 0.001, 0.5, 0.999, 1.0])
    squeezed = squeeze_unit_interval(y)
    assert np.all(np.diff(squeezed) > 0)
    assert squeezed.min() > 0 and squeezed.max() < 1


@pytest.mark.parametrize(("y", "n"), [([0.2, 1.2], None), ([np.nan], None), ([], None), ([0.5], 1)])
def test_squeeze_rejects_bad_input(y, n):
    with pytest.raises(ValueError):
        squeeze_unit_interval(y, n)


def test_fit_refuses_outcomes_on_the_boundary():
    data = pd.DataFrame({"f_att": [0.0, 0.3, 0.5, 0.9, 0.2], "level": [0, 1, 2, 3, 1]})
    with pytest.raises(ValueError, match=r"strictly inside \(0, 1\); squeeze it first"):
        fit_beta_regression(data, "f_att ~ level")


def test_fit_refuses_to_drop_rows_silently():
    data = pd.DataFrame({"f_att": [0.1, 0.3, 0.5, 0.9, 0.2], "level": [0, 1, np.nan, 3, 1]})
    with pytest.raises(ValueError, match="missing values"):
        fit_beta_regression(data, "f_att ~ level")


def _null_slopes(units: tuple[int, ...], sims: int, seed: int) -> np.ndarray:
    """β of ``logit μ = α + β·level`` fitted (squeezed, n = rows) to 40 items' means of two
    shares k/K per level, k ~ Binomial(K, 0.2), K = ``units[level]``: E[k/K] = 0.2 at every
    level, so the mean's slope is 0."""
    rng = np.random.default_rng(seed)
    k = np.repeat(units, 40)
    level = np.repeat(np.arange(len(units)), 40).astype(float)
    out = []
    for _ in range(sims):
        share = rng.binomial(k[:, None], 0.2, size=(k.size, 2)).sum(axis=1) / (2 * k)
        data = pd.DataFrame({"y": squeeze_unit_interval(share), "level": level})
        out.append(fit_beta_regression(data, "y ~ level").coefficients["level"])
    return np.array(out)


def test_null_slope_is_biased_when_the_shares_denominator_rises_with_level():
    # A known bias of the estimator, not a wish (docs/analysis.md, "β of F_att under a null"):
    # beta regression is fitted to discrete shares of key units. Its score for β matches
    # the mean of logit y per level, not of y (Ferrari & Cribari-Neto 2004, eq. for U_β), and
    # an exact 0, squeezed to 0.5/n (Smithson & Verkuilen 2006), has a very low logit. Fewer
    # units per response at low levels give more exact 0s there, so a flat mean F_att is
    # fitted with a positive slope (the pseudo-true value of a misspecified fit, White 1982).
    # 60 fits per design: MC SE of the mean slope about 0.01 (0.0054 at 200 fits).
    equal = _null_slopes((3, 3, 3, 3), sims=60, seed=1)
    rising = _null_slopes((3, 3, 4, 5), sims=60, seed=2)
    se = max(equal.std(ddof=1), rising.std(ddof=1)) / np.sqrt(60)
    assert abs(equal.mean()) <= 3 * se  # the same units at every level: unbiased
    # 200 fits per design measured −0.003 (equal) and +0.095 (rising), MC SE 0.005.
    assert rising.mean() >= 0.05
    assert rising.mean() - equal.mean() >= 6 * se
