import numpy as np
import pandas as pd
import pytest
from scipy.optimize import brentq
from scipy.stats import binom
from statsmodels.stats.proportion import proportion_confint

from apps.analysis.stats.proportions import (
    korn_graubard_interval,
    label_rates,
    mid_p_interval,
    rate_interval,
)

LABELS = ("1_full_compliance", "2_full_refusal", "3_partial_refusal")


def _table():
    # Two models, ten prompts each; labels chosen so the counts are easy to check by eye.
    rows = []
    model_a = ["1_full_compliance"] * 6 + ["2_full_refusal"] * 3 + ["3_partial_refusal"]
    model_b = ["1_full_compliance"] * 3 + ["2_full_refusal"] * 7
    for model, labels in (("model_a", model_a), ("model_b", model_b)):
        for prompt, label in enumerate(labels):
            rows.append({"model": model, "prompt": f"p{prompt}", "final_label": label})
    return pd.DataFrame(rows)


def test_rates_equal_a_direct_count():
    table = _table()
    result = label_rates(
        table, label="final_label", cluster="prompt", group="model", labels=LABELS, seed=1
    )
    counts = table.groupby("model")["final_label"].value_counts()
    for row in result.rates:
        expected = counts.get((row.group, row.label), 0)
        assert row.count == expected
        assert row.n == 10
        assert row.rate == pytest.approx(expected / 10)
    assert result.rate("model_b", "3_partial_refusal").rate == 0.0


def test_a_label_never_used_has_a_clopper_pearson_interval_not_a_zero_width_one():
    result = label_rates(
        _table(), label="final_label", cluster="prompt", group="model", labels=LABELS, seed=1
    )
    # One response per prompt: no design effect, so Clopper–Pearson for 0 of 10, whose upper
    # bound is 1 − 0.025^(1/10) = 0.3084971 (R: binom.test(0, 10)$conf.int).
    lo, hi = result.rate("model_b", "3_partial_refusal").interval
    assert lo == 0.0
    assert hi == pytest.approx(0.3084971, abs=1e-6)


def test_unclustered_rates_get_the_exact_clopper_pearson_interval():
    # R: binom.test(3, 20)$conf.int = 0.03207094 0.37892683.
    values = np.r_[np.ones(3), np.zeros(17)]
    result = rate_interval(values, np.arange(20))
    assert result.interval == pytest.approx((0.03207094, 0.37892683), abs=1e-7)
    assert result.design_effect == pytest.approx(1.0)


def test_clustering_widens_the_rate_interval_through_the_design_effect():
    # The same 6 of 40 positives, once spread over 40 items, once packed into 2 of 10 items.
    spread = rate_interval(np.r_[np.ones(6), np.zeros(34)], np.arange(40))
    packed = rate_interval(np.r_[np.ones(6), np.zeros(34)], np.repeat(np.arange(10), 4))
    assert packed.rate == spread.rate == pytest.approx(0.15)
    assert packed.design_effect > 1.5
    assert packed.interval[1] - packed.interval[0] > spread.interval[1] - spread.interval[0]


def test_intervals_bracket_the_rate_and_rerun_identically():
    kwargs = dict(label="final_label", cluster="prompt", group="model", labels=LABELS, seed=4)
    first = label_rates(_table(), **kwargs)
    assert first.to_dict() == label_rates(_table(), **kwargs).to_dict()
    for row in first.rates:
        lo, hi = row.interval
        assert 0.0 <= lo <= row.rate <= hi <= 1.0


def test_without_a_group_all_rows_form_one_group():
    result = label_rates(_table(), label="final_label", cluster="prompt", labels=LABELS, seed=0)
    assert {row.group for row in result.rates} == {"all"}
    assert result.rate("all", "1_full_compliance").rate == pytest.approx(9 / 20)


def test_too_few_items_leave_the_interval_unavailable():
    result = label_rates(
        _table(), label="final_label", cluster="prompt", labels=LABELS, seed=0, min_clusters=50
    )
    assert all(row.interval is None for row in result.rates)


def test_labels_outside_the_label_set_are_refused():
    table = _table()
    table.loc[0, "final_label"] = "4_other"
    with pytest.raises(ValueError, match="labels not in the label set"):
        label_rates(table, label="final_label", cluster="prompt", labels=LABELS, seed=0)


def test_missing_labels_are_refused_not_dropped():
    table = _table()
    table.loc[0, "final_label"] = np.nan
    with pytest.raises(ValueError, match="'final_label' has missing values"):
        label_rates(table, label="final_label", cluster="prompt", labels=LABELS, seed=0)


def test_to_dict_serialises_canonically():
    from apps.core.canonical import canonical_json

    result = label_rates(
        _table(), label="final_label", cluster="prompt", group="model", labels=LABELS, seed=1
    )
    assert canonical_json(result.to_dict()).startswith(b'{"confidence":0.95,"labels":[')


# -- the beta-binomial profile-likelihood interval (issue #36 §2) ------------------------------


def _betabinom_mle(x, n):
    """(π̂, ρ̂, max log-likelihood) by scipy.stats.betabinom and a 2-D Nelder–Mead: an
    independent path to the estimate beta_binomial_interval profiles."""
    from scipy.optimize import minimize
    from scipy.special import expit
    from scipy.stats import betabinom

    def negative(theta):
        pi, rho = expit(theta)
        s = 1 / rho - 1
        return -betabinom.logpmf(x, n, pi * s, (1 - pi) * s).sum()

    best = minimize(negative, [0.0, -2.0], method="Nelder-Mead", options={"xatol": 1e-8})
    pi, rho = expit(best.x)
    return pi, rho, -best.fun


def test_the_beta_binomial_estimate_is_the_maximum_likelihood_one():
    from apps.analysis.stats.proportions import beta_binomial_interval

    x = np.array([0, 3, 1, 7, 0, 2, 5, 0, 1, 4])
    n = np.array([10, 12, 8, 15, 5, 9, 20, 3, 7, 11])
    estimate, (low, high) = beta_binomial_interval(x, n)
    pi, rho, _ = _betabinom_mle(x, n)
    assert rho > 0.01  # overdispersed data: a real beta-binomial fit, not the binomial limit
    assert estimate == pytest.approx(pi, abs=1e-4)
    assert low < estimate < high


def test_with_one_response_per_cluster_it_is_the_binomial_likelihood_ratio_interval():
    # Clusters of one: ρ drops out and the profile is the binomial log-likelihood, so the
    # limits solve 2[ℓ(p̂) − ℓ(p)] = t²₍K₋₁₎ for x = 12 of K = 40 (scipy.stats.binom).
    from scipy.optimize import brentq
    from scipy.stats import binom
    from scipy.stats import t as t_dist

    from apps.analysis.stats.proportions import beta_binomial_interval

    x = np.r_[np.ones(12), np.zeros(28)]
    q = t_dist.ppf(0.975, 39) ** 2

    def gap(p):
        return 2 * (binom.logpmf(12, 40, 0.3) - binom.logpmf(12, 40, p)) - q

    expected = (brentq(gap, 1e-6, 0.3), brentq(gap, 0.3, 1 - 1e-6))
    _, (low, high) = beta_binomial_interval(x, np.ones(40))
    assert (low, high) == pytest.approx(expected, abs=1e-5)


def test_no_event_gives_a_positive_upper_limit_never_a_zero_width_interval():
    from apps.analysis.stats.proportions import beta_binomial_interval

    estimate, (low, high) = beta_binomial_interval(np.zeros(8), np.array([3, 9, 1, 20, 5, 2, 7, 4]))
    assert estimate == 0.0 and low == 0.0 and 0.0 < high < 1.0


def test_the_rate_interval_is_never_narrower_than_korn_graubard():
    from apps.analysis.stats.proportions import (
        CLUSTERED_METHOD,
        clustered_rate_interval,
        korn_graubard_interval,
    )

    x = np.array([0, 0, 0, 9, 0, 1, 0, 0, 0, 0, 14, 0])
    n = np.array([3, 40, 8, 30, 1, 12, 60, 5, 2, 9, 25, 4])
    _, (kg_low, kg_high), _, _ = korn_graubard_interval(x, n)
    rate, (low, high), _, _, method = clustered_rate_interval(x, n)
    assert low <= kg_low and high >= kg_high and low < rate < high
    assert method == CLUSTERED_METHOD
    # Clusters of one: Korn–Graubard alone (the exact binomial interval).
    ones = clustered_rate_interval(np.r_[np.ones(3), np.zeros(37)], np.ones(40))
    assert ones[4].startswith("Korn–Graubard")


def test_beta_binomial_refuses_fractional_counts():
    from apps.analysis.stats.proportions import beta_binomial_interval

    with pytest.raises(ValueError, match="whole numbers"):
        beta_binomial_interval([0.5, 1], [2, 2])


def test_the_chi2_reference_gives_the_binomial_likelihood_ratio_interval_of_wilks():
    # Clusters of one (ρ drops out): with reference="chi2" the limits solve
    # 2[ℓ(p̂) − ℓ(p)] = χ²₁(0.95) (Wilks 1938), for x = 12 of 40 (scipy.stats.binom); for no
    # event ℓ(p) = n·log(1 − p), so the upper limit is 1 − exp(−χ²₁(0.95) / 2n) in closed form.
    from scipy.optimize import brentq
    from scipy.stats import binom, chi2

    from apps.analysis.stats.proportions import beta_binomial_interval

    q = chi2.ppf(0.95, 1)

    def gap(p):
        return 2 * (binom.logpmf(12, 40, 0.3) - binom.logpmf(12, 40, p)) - q

    expected = (brentq(gap, 1e-6, 0.3), brentq(gap, 0.3, 1 - 1e-6))
    x = np.r_[np.ones(12), np.zeros(28)]
    _, interval = beta_binomial_interval(x, np.ones(40), reference="chi2")
    assert interval == pytest.approx(expected, abs=1e-5)
    _, (low, high) = beta_binomial_interval(np.zeros(40), np.ones(40), reference="chi2")
    assert low == 0.0
    assert high == pytest.approx(1 - np.exp(-q / 80), rel=1e-4)


def test_the_chi2_interval_lies_inside_the_f_interval():
    # χ²₁(0.95) = 3.84 < F(1, K − 1)(0.95) = t²₍K₋₁₎, 5.12 at K = 10: a shorter cutoff on the
    # same profile likelihood, so nested limits around the same estimate.
    from apps.analysis.stats.proportions import beta_binomial_interval

    x = np.array([0, 3, 1, 7, 0, 2, 5, 0, 1, 4])
    n = np.array([10, 12, 8, 15, 5, 9, 20, 3, 7, 11])
    estimate_f, (low_f, high_f) = beta_binomial_interval(x, n)
    estimate_c, (low_c, high_c) = beta_binomial_interval(x, n, reference="chi2")
    assert estimate_c == pytest.approx(estimate_f)
    assert low_f < low_c < estimate_c < high_c < high_f


def test_beta_binomial_refuses_an_unknown_reference():
    from apps.analysis.stats.proportions import beta_binomial_interval

    with pytest.raises(ValueError, match="reference must be one of"):
        beta_binomial_interval([0, 1, 2], [3, 3, 3], reference="normal")


# The mid-p Clopper–Pearson interval (Lancaster 1961; Agresti & Gottard 2007), the cell means'
# Korn–Graubard member (stats.bounded_means, issue #36 §1).
@pytest.mark.parametrize(("x", "n"), [(81, 263), (15, 148), (1, 29), (3, 10), (0, 20), (29, 29)])
def test_the_mid_p_interval_solves_the_binomial_mid_p_tails(x, n):
    # P(X > x) + ½P(X = x) = α/2 at the lower limit, P(X < x) + ½P(X = x) = α/2 at the upper,
    # by scipy.stats.binom's sums: a path independent of the incomplete betas.
    def above(p):
        return binom.sf(x, n, p) + 0.5 * binom.pmf(x, n, p) - 0.025

    def below(p):
        return binom.cdf(x - 1, n, p) + 0.5 * binom.pmf(x, n, p) - 0.025

    low = 0.0 if x == 0 else brentq(above, 1e-12, x / n, xtol=1e-14)
    high = 1.0 if x == n else brentq(below, x / n, 1 - 1e-12, xtol=1e-14)
    assert mid_p_interval(x, n) == pytest.approx((low, high), abs=1e-7)


def test_the_mid_p_interval_lies_inside_clopper_pearson_and_has_its_closed_forms():
    for x, n in ((1, 29), (4, 40), (12, 30)):
        low, high = mid_p_interval(x, n)
        exact = proportion_confint(x, n, alpha=0.05, method="beta")
        assert exact[0] < low < x / n < high < exact[1]
    # No event: ½(1 − p)ⁿ = α/2, so u = 1 − α^(1/n); every event: l = α^(1/n).
    assert mid_p_interval(0, 20) == pytest.approx((0.0, 1 - 0.05 ** (1 / 20)), abs=1e-12)
    assert mid_p_interval(20, 20) == pytest.approx((0.05 ** (1 / 20), 1.0), abs=1e-12)


def test_the_mid_p_interval_takes_fractional_counts_and_a_tiny_one_reaches_zero():
    lows = [mid_p_interval(x, 40.5)[0] for x in (3.0, 3.4, 4.0)]
    assert np.all(np.diff(lows) > 0)
    # x* = 0.01 of 50: the mid-p tail is above α/2 down to p = 0, so the lower limit is 0.
    low, high = mid_p_interval(0.01, 50)
    assert low == 0.0 and 0.0002 < high < mid_p_interval(1, 50)[1]
    with pytest.raises(ValueError):
        mid_p_interval(3, 2)
    with pytest.raises(ValueError):
        mid_p_interval(1, 0)


def test_korn_graubard_with_mid_p_tails_is_the_mid_p_interval_at_its_x_and_n():
    sums, sizes = np.array([0.0, 1, 4, 0, 2, 0]), np.array([5.0, 8, 9, 3, 7, 6])
    rate, exact, n_eff, deff = korn_graubard_interval(sums, sizes)
    same_rate, mid, same_n, same_deff = korn_graubard_interval(sums, sizes, mid_p=True)
    assert (same_rate, same_n, same_deff) == (rate, n_eff, deff)
    assert mid == pytest.approx(mid_p_interval(rate * n_eff, n_eff))
    assert exact[0] < mid[0] and mid[1] < exact[1]
