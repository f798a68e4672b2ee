"""Paired within-block contrasts, checked against a known truth by simulation (seed 002)."""

import itertools

import numpy as np
import pytest

from apps.analysis.stats.paired import newcombe_paired_interval
from apps.analysis.stats.task_blocks import (
    TWO_WAY_MIN_CLUSTERS,
    Contrast,
    clustered_mean_variance,
    clustered_score_interval,
    factor_contrasts,
    paired_contrasts,
    subset_means_interval,
)

FACTORS = {
    "alternate": ("absent", "present"),
    "framing": ("quality", "safety"),
    "friction": ("low", "high"),
}
CONDITIONS = [
    dict(zip(sorted(FACTORS), combo, strict=True))
    for combo in itertools.product(*(FACTORS[n] for n in sorted(FACTORS)))
]


def _simulate(rng, blocks, effects, interaction=0.0, noise=0.3):
    """blocks × 8 values: a block effect, planted factor effects (high − low), noise."""
    codes = {
        n: np.array([1.0 if c[n] == FACTORS[n][1] else -1.0 for c in CONDITIONS]) for n in FACTORS
    }
    mean = sum(effects.get(n, 0.0) / 2 * codes[n] for n in FACTORS)
    mean = mean + interaction / 4 * codes["friction"] * codes["alternate"]
    block = rng.normal(0, 1.0, size=(blocks, 1))
    return block + mean + rng.normal(0, noise, size=(blocks, len(CONDITIONS)))


def test_weights_give_the_high_minus_low_difference_of_means():
    contrasts = factor_contrasts(CONDITIONS, FACTORS, [("friction", "alternate")])
    y = np.array([[1.0 if c["friction"] == "high" else 0.0 for c in CONDITIONS]])
    by_name = {c.name: np.array(c.weights) @ y[0] for c in contrasts}
    assert by_name["friction"] == pytest.approx(1.0)
    assert by_name["alternate"] == pytest.approx(0.0)
    assert by_name["friction×alternate"] == pytest.approx(0.0)


def test_a_planted_contrast_excludes_zero_and_the_others_cover_it():
    rng = np.random.default_rng(20260)
    y = _simulate(rng, 64, {"friction": 0.4})
    contrasts = factor_contrasts(CONDITIONS, FACTORS, [("friction", "alternate")])
    result = {
        r.name: r
        for r in paired_contrasts(y, contrasts, replicates=2000, confidence=0.95, seed=7).contrasts
    }
    planted = result["friction"]
    assert planted.bootstrap_interval[0] > 0 and planted.t_interval[0] > 0
    assert planted.estimate == pytest.approx(0.4, abs=0.1)
    for name in ("alternate", "framing", "friction×alternate"):
        low, high = result[name].bootstrap_interval
        assert low < 0 < high, name
        low, high = result[name].t_interval
        assert low < 0 < high, name


def test_a_planted_interaction_is_found_as_a_difference_of_differences():
    rng = np.random.default_rng(5)
    y = _simulate(rng, 64, {}, interaction=0.6)
    contrasts = factor_contrasts(CONDITIONS, FACTORS, [("friction", "alternate")])
    result = {
        r.name: r
        for r in paired_contrasts(y, contrasts, replicates=2000, confidence=0.95, seed=1).contrasts
    }
    assert result["friction×alternate"].estimate == pytest.approx(0.6, abs=0.15)
    assert result["friction×alternate"].t_interval[0] > 0


def test_intervals_cover_a_null_contrast_at_about_their_nominal_rate():
    rng = np.random.default_rng(99)
    contrasts = [c for c in factor_contrasts(CONDITIONS, FACTORS) if c.name == "framing"]
    boot = t = 0
    runs = 200
    for run in range(runs):
        y = _simulate(rng, 64, {"friction": 0.5})
        r = paired_contrasts(y, contrasts, replicates=500, confidence=0.95, seed=run).contrasts[0]
        boot += r.bootstrap_interval[0] <= 0 <= r.bootstrap_interval[1]
        t += r.t_interval[0] <= 0 <= r.t_interval[1]
    # 95 % nominal; 200 runs: a binomial 99 % band is about 0.91–0.99.
    assert 0.90 <= boot / runs <= 0.99
    assert 0.90 <= t / runs <= 0.99


def test_incomplete_blocks_are_left_out_and_counted_never_imputed():
    rng = np.random.default_rng(3)
    y = _simulate(rng, 20, {"friction": 1.0})
    y[0, 3] = np.nan
    y[5, 0] = np.nan
    contrasts = factor_contrasts(CONDITIONS, FACTORS)
    result = paired_contrasts(y, contrasts, replicates=200, confidence=0.95, seed=1).contrasts[0]
    assert (result.n_blocks, result.n_incomplete) == (18, 2)


def test_too_few_blocks_give_no_interval_with_the_reason():
    y = _simulate(np.random.default_rng(1), 5, {})
    result = paired_contrasts(
        y, factor_contrasts(CONDITIONS, FACTORS), replicates=100, confidence=0.95, seed=1
    )
    assert result.contrasts[0].bootstrap_interval is None
    assert "fewer than the minimum" in result.contrasts[0].note


def test_conditions_that_are_not_the_full_crossing_are_refused():
    with pytest.raises(ValueError, match="full crossing"):
        factor_contrasts(CONDITIONS[:7], FACTORS)
    with pytest.raises(ValueError, match="different factors"):
        factor_contrasts(CONDITIONS, FACTORS, [("friction", "friction")])
    with pytest.raises(ValueError, match="weights"):
        paired_contrasts(
            np.zeros((12, 8)), [Contrast("x", (1.0, -1.0))], replicates=10, confidence=0.9, seed=1
        )


def test_a_rare_zero_one_endpoint_with_no_event_gives_no_zero_width_interval():
    # Issue #36 §4: a 0/1 endpoint at 0.5 % has no event in any of 20 blocks in most samples;
    # the block bootstrap-t and the paired t both gave (0, 0) there. Now: no interval, and why.
    contrasts = factor_contrasts(CONDITIONS, FACTORS, [])
    y = np.zeros((20, len(CONDITIONS)))
    y[3, 0] = y[3, 1] = 1.0  # one block with events that cancel in friction's contrast too
    results = {
        r.name: r
        for r in paired_contrasts(y, contrasts, seed=2, replicates=200, confidence=0.95).contrasts
    }
    friction = results["friction"]
    assert friction.estimate == 0.0
    assert friction.bootstrap_interval is None and friction.t_interval is None
    assert friction.note.startswith("bootstrap and t intervals unavailable: every complete")
    # The 0/1 endpoint's paired score interval is still given, around 0 and never zero-width.
    low, high = friction.score_interval
    assert low < 0.0 < high
    assert friction.interval == friction.score_interval
    # An interaction is no difference of paired proportions: no score interval, so no interval.
    interaction = paired_contrasts(
        y,
        factor_contrasts(CONDITIONS, FACTORS, [("friction", "framing")])[-1:],
        seed=2,
        replicates=200,
        confidence=0.95,
    ).contrasts[0]
    assert interaction.score_interval is None
    # A contrast the event does move keeps both intervals, neither of zero width.
    moved = [r for r in results.values() if r.sd and r.sd > 0]
    assert moved
    for r in moved:
        assert r.bootstrap_interval[0] < r.bootstrap_interval[1]
        assert r.t_interval[0] < r.t_interval[1]


def test_clustering_by_task_with_one_block_per_task_is_the_paired_analysis():
    # One block per task: the CR1 standard error of the mean is s_d/√B exactly, so the
    # task-clustered t interval is scipy's paired t, and the bootstrap draws the same blocks.
    rng = np.random.default_rng(5)
    y = _simulate(rng, 24, {"friction": 0.4})
    contrasts = factor_contrasts(CONDITIONS, FACTORS, [])
    kwargs = {"replicates": 400, "confidence": 0.95, "seed": 9}
    plain = paired_contrasts(y, contrasts, **kwargs).contrasts
    by_task = paired_contrasts(y, contrasts, tasks=list(range(24)), **kwargs)
    for a, b in zip(plain, by_task.contrasts, strict=True):
        assert b.t_interval == pytest.approx(a.t_interval, rel=1e-9)
        assert b.bootstrap_interval == pytest.approx(a.bootstrap_interval, rel=1e-9)


def test_eight_tasks_get_the_sign_flip_interval_and_five_get_none():
    # 8 tasks × 8 rounds: 64 blocks, but 8 clusters (issue #36 §4): below the bootstrap-t's
    # floor of 10, the exact sign-flip interval over the task means; no t interval.
    y = _simulate(np.random.default_rng(6), 64, {"friction": 0.4})
    contrasts = factor_contrasts(CONDITIONS, FACTORS, [])
    tasks = np.repeat([f"task-{t}" for t in range(8)], 8)
    result = paired_contrasts(y, contrasts, replicates=200, confidence=0.95, seed=1, tasks=tasks)
    by_name = {row.name: row for row in result.contrasts}
    low, high = by_name["friction"].bootstrap_interval
    assert 0.0 < low < 0.4 < high  # the planted 0.4, and not 0
    for row in result.contrasts:
        assert row.t_interval is None
        assert "sign-flip" in row.note
    # 5 tasks: 32 subsets, k = ⌊0.05 · 32 / 2⌋ = 0, so no 95 % interval.
    few = paired_contrasts(
        y[:40], contrasts, replicates=200, confidence=0.95, seed=1, tasks=tasks[:40]
    )
    for row in few.contrasts:
        assert row.bootstrap_interval is None and row.t_interval is None
        assert row.note.startswith("interval unavailable: 5 task fixtures contributed")


def test_the_subset_means_interval_matches_hartigans_order_statistics():
    # Hartigan 1969: with G = 6 (63 subset means), k = ⌊0.05 · 64 / 2⌋ = 1, so the interval is
    # the smallest to the largest subset mean: the smallest and largest single value.
    values = np.array([0.3, -0.2, 0.9, 0.1, 0.4, 0.0])
    assert subset_means_interval(values, 0.95) == pytest.approx((-0.2, 0.9))
    # G = 8, k = 6: the 6th smallest of the 255 subset means, found by brute force here.
    rng = np.random.default_rng(3)
    values = rng.normal(size=8)
    means = sorted(
        np.mean(values[[i for i in range(8) if mask >> i & 1]]) for mask in range(1, 256)
    )
    assert subset_means_interval(values, 0.95) == pytest.approx((means[5], means[-6]))
    assert subset_means_interval(values[:5], 0.95) is None


def test_a_zero_one_contrast_gets_newcombes_interval_over_its_matched_pairs():
    # friction's pairs are the 4 condition pairs differing in friction only; over 30 blocks,
    # 120 pairs in one paired 2×2 table (high member first).
    rng = np.random.default_rng(5)
    y = (rng.random((30, len(CONDITIONS))) < 0.3).astype(float)
    (friction,) = [c for c in factor_contrasts(CONDITIONS, FACTORS, []) if c.name == "friction"]
    assert len(friction.pairs) == 4
    for low, high in friction.pairs:
        assert CONDITIONS[low]["friction"] == "low" and CONDITIONS[high]["friction"] == "high"
        assert {k: v for k, v in CONDITIONS[low].items() if k != "friction"} == {
            k: v for k, v in CONDITIONS[high].items() if k != "friction"
        }
    (result,) = paired_contrasts(y, [friction], seed=1, replicates=200, confidence=0.9).contrasts
    lo = y[:, [i for i, _ in friction.pairs]].ravel()
    hi = y[:, [j for _, j in friction.pairs]].ravel()
    table = [int(np.sum((hi == h) & (lo == m))) for h, m in ((1, 1), (1, 0), (0, 1), (0, 0))]
    assert result.score_interval == pytest.approx(newcombe_paired_interval(*table, confidence=0.9))
    assert result.score_interval[0] < result.estimate < result.score_interval[1]
    # A non-0/1 endpoint has none.
    (graded,) = paired_contrasts(
        y * 2.5, [friction], seed=1, replicates=200, confidence=0.9
    ).contrasts
    assert graded.score_interval is None and graded.interval == graded.bootstrap_interval


def test_the_two_way_variance_is_statsmodels_two_way_cluster_robust_covariance():
    # Cameron, Gelbach & Miller 2011: V_task + V_round − V_block, each CR1. statsmodels'
    # cov_type="cluster" with two group columns computes the same (with the (N − 1)/(N − K)
    # factor, 1 for an intercept-only model); one way, it is statsmodels' one-way CR1.
    import statsmodels.api as sm

    rng = np.random.default_rng(11)
    tasks, rounds = np.repeat(np.arange(8), 8), np.tile(np.arange(8), 8)
    d = 0.2 + rng.normal(0, 0.3, 8)[tasks] + rng.normal(0, 0.2, 8)[rounds] + rng.normal(0, 1, 64)
    ones = np.ones((64, 1))
    two = sm.OLS(d, ones).fit(cov_type="cluster", cov_kwds={"groups": np.c_[tasks, rounds]})
    one = sm.OLS(d, ones).fit(cov_type="cluster", cov_kwds={"groups": tasks})
    variance, df = clustered_mean_variance(d, np.ones(64), tasks, rounds)
    assert variance == pytest.approx(float(two.cov_params()[0, 0]), rel=1e-10)
    assert df == 7
    variance, df = clustered_mean_variance(d, np.ones(64), tasks)
    assert variance == pytest.approx(float(one.cov_params()[0, 0]), rel=1e-10)
    assert df == 7
    # Never below either one-way variance: rounds that vary less than blocks would make the
    # raw V_task + V_round − V_block smaller than V_task.
    flat = 0.2 + rng.normal(0, 0.3, 8)[tasks] + rng.normal(0, 1, 64)
    flat -= np.bincount(rounds, flat)[rounds] / 8 - flat.mean()  # round means all equal
    variance, _ = clustered_mean_variance(flat, np.ones(64), tasks, rounds)
    assert variance == pytest.approx(clustered_mean_variance(flat, np.ones(64), tasks)[0])


def test_the_clustered_score_interval_is_newcombes_when_every_pair_is_its_own_cluster():
    # One pair per block, one block per task: the CR1 variance of the mean is the simple random
    # sampling variance Σ(z − θ̂)²/N/(N − 1), so the design effect is 1, the df are N − 1, and
    # the interval is Newcombe's on the counts themselves.
    rng = np.random.default_rng(4)
    low = rng.random((80, 1)) < 0.2
    high = rng.random((80, 1)) < 0.35
    interval, design_effect = clustered_score_interval(low, high, np.arange(80), None, 0.95)
    table = [int(np.sum(h & m)) for h, m in ((high, low), (high, ~low), (~high, low))]
    table.append(80 - sum(table))
    assert design_effect == pytest.approx(1.0)
    assert interval == pytest.approx(newcombe_paired_interval(*table, confidence=0.95))


def test_a_rare_zero_one_contrast_over_repeated_tasks_reads_the_clustered_score_interval():
    # Issue #36 §4: 8 tasks × 8 rounds, one event: the decision reads Newcombe's interval on
    # the task-clustered effective pairs, wider than the pairs-as-independent one, never 0-wide.
    contrasts = [c for c in factor_contrasts(CONDITIONS, FACTORS, []) if c.name == "friction"]
    tasks, rounds = np.repeat(np.arange(8), 8), np.tile(np.arange(8), 8)
    y = np.zeros((64, len(CONDITIONS)))
    y[5, contrasts[0].pairs[0][1]] = 1.0  # one event, at friction high
    kwargs = {"replicates": 200, "confidence": 0.95, "seed": 3}
    (plain,) = paired_contrasts(y, contrasts, **kwargs).contrasts
    (clustered,) = paired_contrasts(y, contrasts, tasks=tasks, rounds=rounds, **kwargs).contrasts
    low, high = clustered.interval
    assert clustered.interval == clustered.score_interval
    assert low < 0.0 < clustered.estimate < high
    assert low < plain.score_interval[0] and high > plain.score_interval[1]
    assert "design effect clustered by task and round" in clustered.interval_method
    assert clustered.to_dict()["interval_method"] == clustered.interval_method


def test_two_way_clustering_needs_enough_tasks_and_rounds_and_says_so():
    rng = np.random.default_rng(8)
    contrasts = factor_contrasts(CONDITIONS, FACTORS, [])
    y = _simulate(rng, 64, {"friction": 0.4})
    kwargs = {"replicates": 200, "confidence": 0.95, "seed": 1}
    (crossed, *_) = paired_contrasts(
        y, contrasts, tasks=np.repeat(np.arange(8), 8), rounds=np.tile(np.arange(8), 8), **kwargs
    ).contrasts
    assert crossed.name == "alternate"
    low, high = crossed.two_way_interval
    assert low < crossed.estimate < high
    assert crossed.interval == crossed.two_way_interval  # not 0/1: no score interval
    assert crossed.to_dict()["two_way_interval"] == [low, high]
    assert "two-way" in crossed.note and "two-way" in crossed.interval_method
    few_rounds = 4
    assert few_rounds < TWO_WAY_MIN_CLUSTERS
    (by_task, *_) = paired_contrasts(
        y,
        contrasts,
        tasks=np.repeat(np.arange(16), 4),
        rounds=np.tile(np.arange(few_rounds), 16),
        **kwargs,
    ).contrasts
    assert by_task.two_way_interval is None and "two_way_interval" not in by_task.to_dict()
    assert by_task.interval == by_task.bootstrap_interval
    assert "clustered by task only: 16 tasks and 4 rounds" in by_task.note
    with pytest.raises(ValueError, match="rounds needs tasks"):
        paired_contrasts(y, contrasts, rounds=np.tile(np.arange(8), 8), **kwargs)
