"""stats.bounded_means: the interval of clustered shares of units (issue #36 §1).

Its coverage is measured by simulation in tests/calibration (``skewed_clustered`` with
``method="bounded_mean"``); these tests check which method each case gets and the edge cases.
"""

import numpy as np
import pytest
from scipy.stats import binom

from apps.analysis.stats.bootstrap import NO_SPREAD_NOTE, family_cluster_bootstrap
from apps.analysis.stats.bounded_means import (
    BOOTSTRAP_T_MAX_SKEWNESS,
    BOOTSTRAP_T_METHOD,
    CHI2_BELOW_CLUSTERS,
    HULL_METHOD,
    RULE_METHOD,
    SMALL_HULL_METHOD,
    bounded_mean_interval,
    effective_events,
    estimate_skewness,
)
from apps.analysis.stats.proportions import beta_binomial_interval, korn_graubard_interval


def _cells(k, per, rate, rng):
    clusters = np.repeat(np.arange(k), per)
    values = (rng.random(clusters.size) < rate).astype(float)
    return values, clusters


def _skewness(values, clusters):
    sums = np.bincount(clusters, weights=values)
    sizes = np.bincount(clusters).astype(float)
    mean, _, n_eff, _ = korn_graubard_interval(sums, sizes)
    return estimate_skewness(mean, n_eff)


def test_many_effective_events_give_the_cluster_bootstrap_t():
    values, clusters = _cells(20, 10, 0.4, np.random.default_rng(1))
    result = bounded_mean_interval(values, clusters, seed=7, replicates=999)
    assert result.effective_events >= 30
    assert _skewness(values, clusters) <= BOOTSTRAP_T_MAX_SKEWNESS
    assert result.method == BOOTSTRAP_T_METHOD
    expected = family_cluster_bootstrap(
        values, clusters, seed=7, aggregation="observation", replicates=999, support=(0, 1)
    )
    assert result.interval == pytest.approx(expected.interval)
    assert result.estimate == pytest.approx(values.mean())


def test_a_mean_away_from_the_bounds_gets_the_bootstrap_t_from_fewer_effective_events():
    # 12 items × 4 responses, 19 events (mean 0.40): about 16 effective events, too few for a
    # mean near 0 (E* ≥ 39 there), but the estimate's skewness as a proportion is small.
    clusters = np.repeat(np.arange(12), 4)
    events = [1, 2, 1, 2, 2, 1, 2, 1, 2, 2, 1, 2]
    values = np.concatenate([[1.0] * e + [0.0] * (4 - e) for e in events])
    result = bounded_mean_interval(values, clusters, seed=7, replicates=999)
    assert result.effective_events < 30
    assert _skewness(values, clusters) <= BOOTSTRAP_T_MAX_SKEWNESS
    assert result.method == BOOTSTRAP_T_METHOD


def test_the_estimates_skewness_is_a_binomial_proportions():
    # Johnson, Kemp & Kotz 2005 §3.2: Binomial(n, p) has skewness (1 − 2p) / √(n p (1 − p)),
    # and a proportion of n trials the same.
    for n, p in ((40, 0.1), (25, 0.3), (300, 0.02), (12, 0.8)):
        assert estimate_skewness(p, n) == pytest.approx(abs(float(binom(n, p).stats("s"))))
    assert estimate_skewness(0.5, 10) == 0.0
    assert estimate_skewness(0.0, 50) == estimate_skewness(1.0, 50) == float("inf")
    # For a small mean the bound reads as a number of effective events: 1/γ*² ≈ E*.
    assert estimate_skewness(0.001, 39_000) == pytest.approx(1 / np.sqrt(39), rel=2e-3)


@pytest.mark.parametrize(
    ("items", "method", "reference"),
    [
        (12, SMALL_HULL_METHOD, "chi2"),
        (CHI2_BELOW_CLUSTERS, HULL_METHOD, "F"),
        (30, HULL_METHOD, "F"),
    ],
)
def test_few_events_give_the_hull_of_korn_graubard_and_the_beta_binomial_on_units(
    items, method, reference
):
    # F_att in quarters (4 required units per item), mostly exact zeros. The beta-binomial
    # member takes the χ²₁ reference below 15 items and F(1, K − 1) from 15.
    rng = np.random.default_rng(3)
    clusters = np.repeat(np.arange(items), 5)
    missed = rng.binomial(4, np.repeat(rng.beta(0.3, 3.0, items), 5))
    values = missed / 4
    result = bounded_mean_interval(values, clusters, np.full(values.size, 4), seed=1)
    assert _skewness(values, clusters) > BOOTSTRAP_T_MAX_SKEWNESS
    assert result.method == method
    sums = np.bincount(clusters, weights=values)
    sizes = np.bincount(clusters).astype(float)
    # The Korn–Graubard member has mid-p tails (module docstring).
    _, kg, _, _ = korn_graubard_interval(sums, sizes, mid_p=True)
    counts = np.bincount(clusters, weights=missed)
    _, bb = beta_binomial_interval(counts, 4 * sizes, reference=reference)
    assert result.interval == pytest.approx((min(kg[0], bb[0]), max(kg[1], bb[1])))
    assert result.interval[0] <= result.estimate <= result.interval[1]
    # Never wider than the hull with the F(1, K − 1) member and the exact Korn–Graubard, never
    # narrower than the mid-p Korn–Graubard.
    _, wide = beta_binomial_interval(counts, 4 * sizes)
    _, exact, _, _ = korn_graubard_interval(sums, sizes)
    assert min(exact[0], wide[0]) <= result.interval[0] <= kg[0]
    assert kg[1] <= result.interval[1] <= max(exact[1], wide[1])


def test_the_hulls_korn_graubard_member_has_mid_p_tails_not_exact_ones():
    # 10 items of 0/1 responses, 3 events in one item: γ* is far above the bound. Korn–Graubard's
    # exact upper limit is above the beta-binomial's, so it bounds the hull, and the mid-p
    # one bounds it now: shorter than the exact hull (issue #36 §1, docs/analysis.md).
    clusters = np.repeat(np.arange(10), 8)
    values = np.zeros(80)
    values[[0, 9, 17]] = 1.0
    result = bounded_mean_interval(values, clusters, seed=1)
    assert result.method == SMALL_HULL_METHOD
    sums = np.bincount(clusters, weights=values)
    sizes = np.bincount(clusters).astype(float)
    _, exact, n_eff, _ = korn_graubard_interval(sums, sizes)
    _, mid, same_n, _ = korn_graubard_interval(sums, sizes, mid_p=True)
    _, bb = beta_binomial_interval(sums, sizes, reference="chi2")
    assert same_n == n_eff
    assert exact[1] > bb[1] and mid[1] > bb[1]
    assert result.interval[1] == pytest.approx(mid[1])
    assert result.interval[1] < exact[1] - 0.005
    assert result.interval == pytest.approx((min(mid[0], bb[0]), max(mid[1], bb[1])))


@pytest.mark.parametrize("items", [10, 14, 15, 40])
@pytest.mark.parametrize("value", [0.0, 1.0])
def test_a_cell_of_exact_zeros_or_ones_gets_an_interval_that_is_never_zero_width(items, value):
    # A mean of 0 is never the interval 0–0 (nor a mean of 1 the interval 1–1), with either
    # reference of the beta-binomial member.
    clusters = np.repeat(np.arange(items), 3)
    values = np.full(3 * items, value)
    result = bounded_mean_interval(values, clusters, np.full(values.size, 4), seed=1)
    assert result.estimate == value
    assert result.method == (SMALL_HULL_METHOD if items < CHI2_BELOW_CLUSTERS else HULL_METHOD)
    low, high = result.interval
    assert high - low > 0.01
    assert (low, high)[0 if value == 0.0 else 1] == value


def test_few_events_and_values_that_are_not_counts_of_units_have_no_interval():
    clusters = np.repeat(np.arange(10), 3)
    values = np.zeros(30)
    values[:4] = 0.3  # 0.3 of 4 units is no whole count: an F_att averaged over raters, say
    result = bounded_mean_interval(values, clusters, np.full(30, 4), seed=1)
    assert result.interval is None
    assert result.note.startswith("interval unavailable")
    assert "not whole counts" in result.note


def test_many_events_with_no_spread_between_clusters_have_no_interval():
    clusters = np.repeat(np.arange(12), 10)
    values = np.tile([0.0, 1.0], 60)  # every item at 0.5
    result = bounded_mean_interval(values, clusters, seed=1)
    assert result.method == BOOTSTRAP_T_METHOD
    assert result.interval is None and result.note == NO_SPREAD_NOTE


def test_fewer_clusters_than_the_floor_have_no_interval():
    values, clusters = _cells(8, 10, 0.4, np.random.default_rng(2))
    result = bounded_mean_interval(values, clusters, seed=1, min_clusters=6)
    assert result.interval is None and result.min_clusters == 10
    assert result.method == RULE_METHOD
    assert "fewer than the minimum of 10" in result.note


def test_effective_events_is_the_korn_graubard_effective_count():
    sums, sizes = np.array([0.0, 1, 2, 0, 5]), np.array([3.0, 4, 6, 2, 9])
    mean, _, n_eff, _ = korn_graubard_interval(sums, sizes)
    assert effective_events(sums, sizes) == pytest.approx(n_eff * min(mean, 1 - mean))


@pytest.mark.parametrize(
    ("values", "units"),
    [([0.5, 1.5] * 6, None), ([0.5, np.nan] * 6, None), ([0.5] * 12, [0, 1] * 6)],
)
def test_bad_input_is_refused(values, units):
    with pytest.raises(ValueError):
        bounded_mean_interval(values, np.repeat(np.arange(6), 2), units, seed=1)
