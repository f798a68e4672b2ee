"""The calibration suite in small (default run): a few hundred runs per design, loose bounds.

Enough to fail the build when an interval method regresses (say, back to the percentile
bootstrap, or a rate interval that collapses at a count of 0), in a few seconds. The full suite,
with the targets themselves, is ``make calibrate`` (tests/calibration/test_calibration.py).
"""

from tests.calibration import designs

RUNS = 300


def test_quick_cluster_bootstrap_t_near_nominal_with_ten_clusters():
    result = designs.clustered_binary(10, 0.2, runs=RUNS, replicates=499)
    assert 0.90 <= result.coverage <= 0.99, result.row()


def test_quick_rare_rates_cover_and_never_collapse():
    result = designs.rare_rate(0.005, runs=RUNS)
    assert result.coverage >= 0.91, result.row()
    assert result.extra["zero_width"] == 0


def test_quick_f_att_slope_accounts_for_items():
    spec = designs.FattDesign(items=8, slope=0.0, slope_sd=0.2)
    result = designs.fatt_coverage(spec, runs=RUNS)
    # The model-based (independence) SE covered about 71 % here; clustered by item, ~95 %.
    assert result.coverage >= 0.90, result.row()


def test_quick_null_truth_rarely_reports_a_penalty():
    rates = designs.decision_rates("null", beta_a=0.0, beta_b=0.4, runs=RUNS)
    assert rates.get("OPB01-8.2", 0) + rates.get("OPB01-8.3", 0) <= 0.06, rates


def test_quick_simple_effects_cover_near_nominal():
    # Issue #32 §4 in small: 200 runs of 64 task blocks; the 1,000-run check is make calibrate.
    for result in designs.simple_effect_coverage(runs=200, replicates=299):
        assert 0.90 <= result.coverage <= 0.99, result.row()


def test_quick_block_contrasts_clustered_by_task_cover():
    # Issue #36 §4 in small: 16 tasks × 4 rounds with task effects (SD 0.12) on the contrast.
    _independent, boot, paired_t = designs.task_clustered_coverage(
        tasks=16, rounds=4, runs=200, replicates=299
    )
    assert 0.90 <= boot.coverage <= 0.99, boot.row()
    assert 0.90 <= paired_t.coverage <= 0.99, paired_t.row()


def test_quick_rare_zero_one_block_contrast_is_covered_and_never_zero_width():
    # Issue #36 §4 in small: a 0/1 endpoint at 0.5 %, 64 blocks; the score interval decides.
    _boot, score = designs.rare_block_contrast_coverage(
        rate=0.005, effect=0.005, runs=200, replicates=99
    )
    assert score.coverage >= 0.93, score.row()
    assert score.extra["zero_width"] == 0, score.row()


def test_quick_differences_of_clustered_rates_and_means_cover_near_nominal():
    # Issue 34 §10 in small: 10 items a condition, ICC 0.2, very unequal item sizes.
    for result in designs.condition_difference_coverage(10, 0.2, runs=RUNS):
        assert 0.90 <= result.coverage <= 0.99, result.row()


def test_quick_judge_alpha_and_kappa_intervals_cover_a_known_agreement():
    # Issue 34 §5 in small: 150 runs of 20 items × 4 audited responses, 299 replicates.
    for result in designs.judge_coverage(items=20, per_item=4, runs=150, replicates=299):
        assert 0.88 <= result.coverage <= 0.99, result.row()


def test_quick_skewed_cell_means_do_not_under_cover():
    # Issue #36 §1 in small: logit-normal clusters of 1–60, p = 0.05, ICC 0.3, 20 items, where
    # the bootstrap-t alone covered 82 %; the cell means' interval (stats.bounded_means) uses
    # the rate hull where the estimate's skewness γ* is above 0.16 (few effective events).
    result = designs.skewed_clustered(20, 0.3, 0.05, method="bounded_mean", runs=200)
    assert result.coverage >= 0.91, result.row()
    assert result.extra["unavailable"] == 0, result.row()
    fatt = designs.skewed_clustered(20, 0.2, 0.08, outcome="fatt", method="bounded_mean", runs=200)
    assert fatt.coverage >= 0.91, fatt.row()


def test_quick_a_rung_at_its_policy_limits_is_rarely_accepted():
    # Issue #36 §3 in small: a rung exactly at its floor (lower bound) and rate ceiling (exact
    # upper bound), 10 families × 6 episodes, 200 runs of 299 replicates.
    rates = designs.acceptance_at_the_limits(
        families=10, episodes=6, fail_icc=0.0, ungraded=0.0, runs=200, replicates=299
    )
    assert rates["floor"] <= 0.07, rates
    assert rates["ceiling"] <= 0.10, rates


def test_quick_rare_contrast_with_repeated_tasks_is_covered_and_never_zero_width():
    # Issue #36 §4 in small: a 0/1 endpoint at 0.5 %, 8 tasks × 8 rounds with task frailties;
    # the decision reads Newcombe's interval on the task-clustered effective pairs.
    *_, decision = designs.rare_task_contrast_coverage(
        tasks=8, rounds=8, rate=0.005, effect=0.005, runs=200, replicates=99
    )
    assert decision.coverage >= 0.91, decision.row()
    assert decision.extra["zero_width"] == 0 and decision.extra["unavailable"] == 0


def test_quick_task_and_round_effects_are_covered_two_ways():
    # Issue #36 §4 in small: 8 tasks × 8 rounds, task and round effects on the contrast.
    _task_only, two_way, decision = designs.two_way_coverage(
        tasks=8, rounds=8, runs=200, replicates=99
    )
    assert 0.90 <= two_way.coverage <= 0.99, two_way.row()
    assert 0.90 <= decision.coverage <= 0.99, decision.row()


def test_quick_full_null_findings_are_rare():
    # Issue #36 §6 in small: no effect anywhere, 300 runs; each finding ≤ 2.5 % promised.
    rates = designs.full_null_rates(runs=RUNS)
    assert all(v <= 0.06 for k, v in rates.items() if k.startswith("OPB01-")), rates
    assert rates.get("any finding", 0) <= 0.2, rates
