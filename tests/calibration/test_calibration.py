"""The calibration suite: does each interval and decision rule the product reports cover?

Marked ``calibration`` and left out of the default run: ``make calibrate`` runs it (a few
minutes on two cores). 2,000 simulated data sets per design, so the Monte Carlo standard error
of a coverage near 95 % is 0.5 points (≤ 0.7 everywhere the targets apply). Each test records
its figures (conftest.py) before it asserts: the session prints them as the table of
docs/analysis.md, and ``make calibrate`` writes them there, so every design is computed once.
Targets (issue #19):

- cluster bootstrap-t, 95 %: 93.5–96.5 % from 10 to 80 clusters; 6 clusters are below the floor;
- rates (Korn–Graubard): ≥ 94 % at 0.5 %, 1 %, 2.5 % with 200 items, never zero-width;
- β of F_att (cluster-robust by item, t(G − 1)): ≥ 93 % under an item random slope SD 0.2,
  from 6 items; its bootstrap (expanded percentile) within two Monte Carlo SE of 93 %;
- decision table: a penalty finding under the null, or "no penalty" under a penalty, at most
  at the one-sided 2.5 % its intervals promise (plus Monte Carlo slack);
- F_att / A_att cell means (issue #36 §1, ``stats.bounded_means``): 93.5–96.5 % on the skewed
  designs (logit-normal clusters of 1–60, p = 0.05–0.1, F_att with many exact zeros) and on the
  designs the bootstrap-t is calibrated on, except four skewed designs where no interval
  screened reaches the band's upper edge without another design falling to within 0.5 point of
  93.5 %: there ≥ 93.5 % (``ABOVE_THE_BAND``; docs/analysis.md);
- CRUCIBLE's acceptance verdicts (issue #36 §3): a rung exactly at its policy's limits is
  accepted on its floor (interval's lower bound) in at most 2.5 % of runs and on its hard-fail
  rate ceiling (exact upper bound) in at most 5 %, plus Monte Carlo slack.
"""

import pytest

from apps.analysis.stats.bootstrap import (
    PERCENTILE_CALIBRATED_CLUSTERS,
    PERCENTILE_COVERAGE_MEASURED,
)
from tests.calibration import designs

pytestmark = pytest.mark.calibration

RUNS = 2000


def _check_mc_se(result):
    assert result.mc_se <= 0.007, result.row()


@pytest.mark.parametrize("aggregation", ["observation", "cluster_mean"])
@pytest.mark.parametrize("icc", [0.05, 0.2])
@pytest.mark.parametrize("n_clusters", [10, 20, 40, 80])
def test_the_cluster_bootstrap_t_covers_from_ten_clusters(
    n_clusters, icc, aggregation, calibration_table
):
    result = designs.clustered_binary(n_clusters, icc, aggregation=aggregation, runs=RUNS)
    calibration_table(result)
    _check_mc_se(result)
    assert 0.935 <= result.coverage <= 0.965, result.row()


@pytest.mark.parametrize("aggregation", ["observation", "cluster_mean"])
@pytest.mark.parametrize("icc", [0.05, 0.2])
def test_six_clusters_are_below_the_floor_and_the_figure_shows_why(
    icc, aggregation, calibration_table
):
    # Reported, not interpolated: the product refuses an interval here (MIN_CLUSTERS_FLOOR).
    result = designs.clustered_binary(6, icc, aggregation=aggregation, runs=RUNS)
    calibration_table(result)
    assert result.coverage < 0.99, result.row()


@pytest.mark.parametrize("n_clusters", [3, 6, 10, 20, 40, 80])
def test_the_percentile_interval_crucible_preregisters_under_covers(n_clusters, calibration_table):
    # Not a target: docs/analysis.md and docs/crucible.md say the crucible pipeline's percentile
    # interval (CRUCIBLE §9.1) covers less than its nominal level below 80 families, which is why
    # the freeze gate refuses it there and a run withholds it (issue #36 §3).
    result = designs.clustered_binary(
        n_clusters, 0.2, aggregation="cluster_mean", runs=RUNS, method="percentile"
    )
    calibration_table(result)
    # The figures each withheld crucible percentile interval carries (issue #36 §3) are these
    # runs'.
    stated = PERCENTILE_COVERAGE_MEASURED[n_clusters]
    assert abs(result.coverage - stated) <= 2 * result.mc_se, (stated, result.row())
    if n_clusters < PERCENTILE_CALIBRATED_CLUSTERS:
        assert result.coverage < 0.935, result.row()


@pytest.mark.parametrize("rate", [0.005, 0.01, 0.025, 0.05, 0.1, 0.2])
def test_rates_cover_and_are_never_zero_width(rate, calibration_table):
    result = designs.rare_rate(rate, runs=RUNS)
    calibration_table(result)
    _check_mc_se(result)
    assert result.coverage >= 0.94, result.row()
    assert result.extra["zero_width"] == 0


@pytest.mark.parametrize("items", [6, 10, 40])
@pytest.mark.parametrize("rate", [0.01, 0.05, 0.2])
def test_clustered_rates_cover(rate, items, calibration_table):
    # Items × 5 repetitions, ICC 0.1: the design effect is what the interval must carry.
    result = designs.rare_rate(rate, items=items, repetitions=5, icc=0.1, runs=RUNS)
    calibration_table(result)
    assert result.coverage >= 0.94, result.row()
    assert result.extra["zero_width"] == 0


@pytest.mark.parametrize("items", [6, 8, 10, 20])
@pytest.mark.parametrize("slope", [0.0, 0.3])
def test_the_f_att_slope_interval_covers_under_item_random_slopes(items, slope, calibration_table):
    spec = designs.FattDesign(items=items, slope=slope, slope_sd=0.2)
    result = designs.fatt_coverage(spec, runs=RUNS)
    calibration_table(result)
    _check_mc_se(result)
    assert result.coverage >= 0.93, result.row()


# Every run of the slope bootstrap refits the model 499 times: 1,500 runs keep the Monte Carlo
# SE at 0.66 points for a coverage of 93 %.
BOOTSTRAP_RUNS = 1500


@pytest.mark.parametrize("items", [6, 10, 20])
def test_the_f_att_slope_bootstrap_covers_from_ten_items(items, calibration_table):
    spec = designs.FattDesign(items=items, slope=0.0, slope_sd=0.2)
    result = designs.fatt_bootstrap_coverage(spec, runs=BOOTSTRAP_RUNS)
    calibration_table(result)
    if items >= 10:  # 6 items are below the floor: shown, not a target (nor its MC SE)
        _check_mc_se(result)
        assert result.coverage >= 0.93 - 2 * result.mc_se, result.row()


def _decision(truth, beta_a, beta_b, record):
    rates = designs.decision_rates(truth, beta_a=beta_a, beta_b=beta_b, runs=RUNS)
    shares = ", ".join(f"{k} {100 * v:.1f} %" for k, v in rates.items() if k != "runs")
    record(f"| {truth} ({beta_a}, {beta_b}), {rates['runs']} runs | {shares} |")
    return rates


def test_under_the_null_no_penalty_is_found_more_often_than_its_intervals_allow(
    calibration_table,
):
    rates = _decision("null", 0.0, 0.4, calibration_table)
    false_penalty = rates.get("OPB01-8.2", 0) + rates.get("OPB01-8.3", 0)
    assert false_penalty <= 0.025 + 3 * 0.0035, rates
    # The interval criterion lets 8.1 (β_A's 90 % interval inside ±ε) and 8.3 (its 95 % lower
    # bound above 0, β_LF below 0) hold together in about 1 run in 1,000: reported as
    # "contradictory", never as two findings.
    assert rates.get("contradictory", 0) <= 0.005, rates


def test_under_a_full_penalty_no_penalty_is_not_reported(calibration_table):
    rates = _decision("penalty", 0.4, 0.4, calibration_table)
    assert rates.get("OPB01-8.1", 0) <= 0.025 + 3 * 0.0035, rates


def test_under_a_partial_penalty_the_anomaly_is_rare(calibration_table):
    rates = _decision("partial", 0.2, 0.4, calibration_table)
    assert rates.get("OPB01-8.4", 0) <= 0.025 + 3 * 0.0035, rates
    assert rates.get("OPB01-8.1", 0) <= 0.025 + 3 * 0.0035, rates


# Issue #32 §4: seed 002's simple effects (each factor within each level of another). The issue
# asks for 1,000 runs; the suite's 2,000 keep the Monte Carlo SE at 0.5 points, because the
# bootstrap-t sits a little under nominal here (94.0 % ± 0.4 over 4,000 runs; 93.1 % ± 0.8 at
# 1,000, outside the band by Monte Carlo error alone): docs/analysis.md gives every figure.
SIMPLE_EFFECT_RUNS = 2000


@pytest.mark.parametrize("contrast", ["friction_at_alternate_present", "alternate_at_friction_low"])
def test_simple_effects_cover_at_their_nominal_level(contrast, calibration_table):
    boot, paired_t, score = designs.simple_effect_coverage(
        runs=SIMPLE_EFFECT_RUNS, contrast=contrast
    )
    for result in (boot, paired_t, score):
        calibration_table(result)
        assert 0.935 <= result.coverage <= 0.965, result.row()


# Issue #36 §1: the independent simulation's designs — logit-normal clusters of very unequal
# size (1–60), skewed and rare means of 0/1 outcomes, discrete F_att with many exact zeros. The
# cluster bootstrap-t alone misses here (68–94 %, truth above the interval); the product's
# interval of F_att / A_att cell means (stats.bounded_means) uses it only where the estimate's
# skewness as a binomial proportion of Korn–Graubard's n* trials, γ* = |1 − 2ȳ| / √(n* ȳ(1 − ȳ)),
# is at most 0.16, else the rate hull of the units' counts (Korn–Graubard with mid-p tails, and
# the beta-binomial with the χ²₁ reference below 15 clusters, F(1, K − 1) from 15). Both are
# recorded on the same design: the bootstrap-t's row shows why the rule exists. The target is
# the band, 93.5–96.5 %, except in ABOVE_THE_BAND, where only its lower edge is asserted (the
# interval must not under-cover): no rule screened (tests/calibration/screen_cell_means.py,
# docs/analysis.md) brings them into it without taking another design below 93.5 %. At K = 10
# and p = 0.05 (one to five effective events) the counts are too few and discrete for an
# interval both exact and short; at K = 80, p = 0.1, ICC 0.3 every hull screened covers
# 96.9–97.4 % (2,000 runs), and its members alone, 92.3–93.8 % there, under-cover other designs
# (Korn–Graubard to 86.4 %, the beta-binomial to 88.6 %). F_att at K = 40 (96.7 % with the
# exact Korn–Graubard member) came into the band with the mid-p one.
SKEWED_TARGET = 0.935
BAND_TOP = 0.965
# (outcome, K, ICC, p) of the skewed designs whose band's upper edge is not asserted.
ABOVE_THE_BAND = {
    ("binary", 10, 0.2, 0.05),
    ("binary", 10, 0.3, 0.05),
    ("binary", 80, 0.3, 0.1),
}


def _check_cell_mean_band(result, key):
    assert result.coverage >= SKEWED_TARGET, result.row()
    if key not in ABOVE_THE_BAND:
        assert result.coverage <= BAND_TOP, result.row()


@pytest.mark.parametrize("n_clusters", [10, 20, 40, 80])
@pytest.mark.parametrize("icc", [0.2, 0.3])
@pytest.mark.parametrize("rate", [0.05, 0.1])
def test_skewed_clustered_means_cover(rate, icc, n_clusters, calibration_table):
    calibration_table(designs.skewed_clustered(n_clusters, icc, rate, runs=RUNS))
    result = designs.skewed_clustered(n_clusters, icc, rate, method="bounded_mean", runs=RUNS)
    calibration_table(result)
    _check_mc_se(result)
    assert result.extra["unavailable"] == 0, result.row()  # whole counts: always an interval
    _check_cell_mean_band(result, ("binary", n_clusters, icc, rate))


@pytest.mark.parametrize("n_clusters", [10, 20, 40, 80])
def test_f_att_cells_with_many_exact_zeros_cover(n_clusters, calibration_table):
    calibration_table(designs.skewed_clustered(n_clusters, 0.2, 0.08, outcome="fatt", runs=RUNS))
    result = designs.skewed_clustered(
        n_clusters, 0.2, 0.08, outcome="fatt", method="bounded_mean", runs=RUNS
    )
    calibration_table(result)
    _check_mc_se(result)
    assert result.extra["unavailable"] == 0, result.row()
    _check_cell_mean_band(result, ("fatt", n_clusters, 0.2, 0.08))


@pytest.mark.parametrize("aggregation", ["observation", "cluster_mean"])
@pytest.mark.parametrize("icc", [0.05, 0.2])
@pytest.mark.parametrize("n_clusters", [10, 20, 40, 80])
def test_the_cell_mean_interval_covers_where_the_bootstrap_t_did(
    n_clusters, icc, aggregation, calibration_table
):
    # The designs the bootstrap-t is calibrated on (rate 0.3, clusters of 2–20), through the
    # cell means' interval that chooses it by γ*: it must still cover there, within the band.
    result = designs.clustered_binary(
        n_clusters, icc, aggregation=aggregation, runs=RUNS, method="bounded_mean"
    )
    calibration_table(result)
    _check_mc_se(result)
    assert SKEWED_TARGET <= result.coverage <= BAND_TOP, result.row()


# Issue #36 §2: the product's rate interval (stats.proportions.clustered_rate_interval) is the
# hull of Korn–Graubard, which alone missed here (83.1–92.2 % from K = 20 on, truth above:
# docs/analysis.md), and the beta-binomial profile-likelihood interval.
@pytest.mark.parametrize("n_clusters", [10, 20, 40, 80])
@pytest.mark.parametrize("rate", [0.005, 0.01, 0.02, 0.05, 0.1])
def test_rare_clustered_rates_cover_at_icc_0_3(rate, n_clusters, calibration_table):
    result = designs.skewed_clustered(n_clusters, 0.3, rate, method="clustered_rate", runs=RUNS)
    calibration_table(result)
    _check_mc_se(result)
    assert result.coverage >= 0.94, result.row()


# Issue #36 §4: tasks that repeat over rounds share a task effect on the contrast, so blocks
# are not independent. Clustered by task (paired_contrasts(tasks=…)), from 10 tasks.
@pytest.mark.parametrize(
    ("tasks", "rounds", "task_sd"),
    [(8, 8, 0.10), (8, 8, 0.12), (8, 8, 0.15), (10, 6, 0.12), (16, 4, 0.12), (20, 4, 0.12)],
)
def test_block_contrasts_clustered_by_task_cover(tasks, rounds, task_sd, calibration_table):
    results = designs.task_clustered_coverage(
        tasks=tasks, rounds=rounds, task_sd=task_sd, runs=RUNS
    )
    for result in results:
        calibration_table(result)
    independent, *clustered = results
    # Blocks as independent: what the issue measured, below target.
    assert independent.coverage < 0.935, independent.row()
    if tasks < 10:  # the sign-flip interval over task means only, no t interval
        assert len(clustered) == 1 and "sign-flip" in clustered[0].method
    for result in clustered:
        _check_mc_se(result)
        assert 0.935 <= result.coverage <= 0.965, result.row()


# Issue #36 §4: a 0/1 endpoint at 0.5 % (events clustered in blocks by a Gamma frailty). The
# block bootstrap-t covered ~80 % with zero-width intervals; Newcombe's paired score interval,
# the one decisions read for a 0/1 endpoint, covers and is never zero-width.
@pytest.mark.parametrize(
    ("rate", "effect"), [(0.005, 0.0), (0.005, 0.005), (0.02, 0.02), (0.05, 0.05)]
)
def test_zero_one_block_contrasts_are_covered_by_the_score_interval(
    rate, effect, calibration_table
):
    boot, score = designs.rare_block_contrast_coverage(rate=rate, effect=effect, runs=RUNS)
    calibration_table(boot)
    calibration_table(score)
    _check_mc_se(score)
    assert score.coverage >= 0.935, score.row()
    assert score.extra["zero_width"] == 0, score.row()


# Issue #36 §3, §6: CRUCIBLE's acceptance verdicts. A rung whose true axis mean is its policy's
# floor (on the interval's lower bound) and whose true hard-fail rate is its ceiling (on the
# exact upper bound) should be accepted rarely: the floor in at most 2.5 % of runs (the lower
# end of a two-sided 95 % interval), the ceiling in at most 5 % (a one-sided 95 % bound). The
# Clopper–Pearson bound takes episodes as independent and ungraded episodes as not failing (the
# policy's default): the designs with failures clustered in families (ICC 0.1) or 10 % of
# episodes ungraded show what that costs, and are reported, not asserted.
ACCEPTANCE_SLACK = 3  # Monte Carlo SEs


@pytest.mark.parametrize(
    ("families", "episodes", "fail_icc", "ungraded"),
    [(10, 6, 0.0, 0.0), (20, 6, 0.0, 0.0), (20, 6, 0.1, 0.0), (20, 6, 0.0, 0.1)],
)
def test_a_rung_at_its_policy_limits_is_rarely_accepted(
    families, episodes, fail_icc, ungraded, calibration_table
):
    rates = designs.acceptance_at_the_limits(
        families=families, episodes=episodes, fail_icc=fail_icc, ungraded=ungraded, runs=RUNS
    )
    calibration_table(
        f"| {rates['design']} | {100 * rates['floor']:.1f} % | {100 * rates['ceiling']:.1f} % "
        f"| {100 * rates['rung']:.1f} % | {rates['runs']} |",
        kind="acceptance",
    )

    def bound(p):
        return p + ACCEPTANCE_SLACK * (p * (1 - p) / rates["runs"]) ** 0.5

    assert rates["floor"] <= bound(0.025), rates
    if fail_icc == 0 and ungraded == 0:
        assert rates["ceiling"] <= bound(0.05), rates


@pytest.mark.parametrize("design", ["nested", "crossed"])
@pytest.mark.parametrize("icc", [0.05, 0.2])
@pytest.mark.parametrize("n_clusters", [10, 20, 40])
def test_differences_and_ratios_between_two_conditions_cover(
    n_clusters, icc, design, calibration_table
):
    """Issues 34 §10 and 36: the comparison pipeline's intervals for B − A (rates and means,
    CR2 with Bell–McCaffrey t) and B / A (rates), from 10 clusters a condition, within
    93.5–96.5 %. Nested designs take their degrees of freedom from the random-effects working
    model (Imbens & Kolesár 2016 §IV): under independence those with ICC 0.2 covered
    92.5–93.0 %. One row stays above the band, conservative: the ratio at 10 items a condition
    with ICC 0.2 (97.2 %; under independence 94.7 %): docs/analysis.md."""
    results = designs.condition_difference_coverage(n_clusters, icc, design=design, runs=RUNS)
    for result in results:
        calibration_table(result)
    for result in results:
        _check_mc_se(result)
        above = (design, n_clusters, icc) == ("nested", 10, 0.2) and "ratio" in result.method
        assert 0.935 <= result.coverage <= (0.975 if above else 0.965), result.row()


@pytest.mark.parametrize("icc", [0.05, 0.2])
@pytest.mark.parametrize("n_clusters", [10, 20, 40])
def test_one_conditions_mean_covers(n_clusters, icc, calibration_table):
    """The comparison pipeline's level of one condition (``clustered_mean``), its degrees of
    freedom under independence: 93.5–95.3 % on these draws, where the random-effects working
    model of the nested differences gave 95.3–97.0 % (two designs above the band)."""
    result = designs.condition_level_coverage(n_clusters, icc, runs=RUNS)
    calibration_table(result)
    _check_mc_se(result)
    assert 0.935 <= result.coverage <= 0.965, result.row()


@pytest.mark.parametrize(("items", "per_item"), [(12, 4), (30, 4), (60, 2)])
def test_judge_alpha_and_kappa_intervals_cover_a_known_agreement(
    items, per_item, calibration_table
):
    # Issue 34 §5: α and κ of a judge against the humans, items resampled with their responses
    # (2,000 runs each gave 93.5–93.6 % at 12 items × 4, 94.7 % at 30 × 4, 94.0 % at 60 × 2).
    for result in designs.judge_coverage(items=items, per_item=per_item, runs=RUNS):
        calibration_table(result)
        _check_mc_se(result)
        assert 0.925 <= result.coverage <= 0.97, result.row()


# Issue #36 §4: a rare 0/1 endpoint when tasks repeat over rounds, so that both the task
# clustering and the rare-event score interval matter (events clustered in tasks and blocks by
# Gamma frailties). The interval decisions read is Newcombe's score interval on the pairs'
# design-effect effective number, clustered by task (task_blocks.clustered_score_interval):
# never zero-width. Its target is the band's lower edge only: it is conservative by
# construction where events are few (the design effect is never below 1, the t(G − 1)
# adjustment only shrinks the effective pairs, and Wilson limits at a handful of events cover
# above nominal), as the score interval of the rare block contrasts above (98.6–99.2 %).
# The last design's tasks differ much more (task frailty Gamma(0.5), coefficient of variation
# 1.4): there the pairs taken as independent miss, and the task clustering is what covers.
@pytest.mark.parametrize(
    ("tasks", "rounds", "rate", "effect", "task_shape"),
    [
        (8, 8, 0.005, 0.0, 2.0),
        (8, 8, 0.005, 0.005, 2.0),
        (16, 4, 0.005, 0.005, 2.0),
        (8, 8, 0.02, 0.02, 2.0),
        (8, 8, 0.02, 0.02, 0.5),
    ],
)
def test_rare_zero_one_contrasts_with_repeated_tasks_cover(
    tasks, rounds, rate, effect, task_shape, calibration_table
):
    results = designs.rare_task_contrast_coverage(
        tasks=tasks, rounds=rounds, rate=rate, effect=effect, task_shape=task_shape, runs=RUNS
    )
    for result in results:
        calibration_table(result)
    decision = results[-1]
    assert "the decision's" in decision.method
    _check_mc_se(decision)
    assert decision.coverage >= 0.935, decision.row()
    assert decision.extra["unavailable"] == 0, decision.row()
    assert decision.extra["zero_width"] == 0, decision.row()


# Issue #36 §4, "two-way if both matter": rounds with their own effect on the contrast (SD
# 0.15, a provider change or a time of day between rounds) besides the tasks' (SD 0.12). The
# task-clustered interval alone misses the rounds' share; from TWO_WAY_MIN_CLUSTERS tasks and
# rounds the pipeline clusters two ways (Cameron, Gelbach & Miller 2011), and a 0/1 endpoint's
# score interval takes the two-way design effect. Without round effects the two-way interval
# must not be much wider than it needs to be: the band applies there too. With 4 rounds the
# rounds are taken as fixed (by task only: the estimate is for the rounds run, and its
# decision interval is measured against that truth). The 0/1 endpoint's score interval on the
# effective pairs is conservative by construction, as above (96.8 % at 8 × 8 without round
# effects, where the two-way t interval gives 96.2 %): its target is ≥ 93.5 %, and at most
# 97 % so that a needlessly wide rule would fail.
@pytest.mark.parametrize(
    ("tasks", "rounds", "round_sd"),
    [(8, 8, 0.15), (8, 8, 0.0), (12, 8, 0.15), (16, 4, 0.15)],
)
def test_block_contrasts_with_task_and_round_effects_cover(
    tasks, rounds, round_sd, calibration_table
):
    from apps.analysis.stats.task_blocks import TWO_WAY_MIN_CLUSTERS

    results = designs.two_way_coverage(tasks=tasks, rounds=rounds, round_sd=round_sd, runs=RUNS)
    for result in results:
        calibration_table(result)
    task_only, *two_way, decision = results
    if round_sd > 0:  # against the truth over rounds, the task-clustered interval misses
        assert task_only.coverage < 0.935, task_only.row()
    assert len(two_way) == (1 if rounds >= TWO_WAY_MIN_CLUSTERS else 0)
    for result in two_way:
        _check_mc_se(result)
        assert 0.935 <= result.coverage <= 0.965, result.row()
    assert "the decision's" in decision.method
    _check_mc_se(decision)
    assert 0.935 <= decision.coverage <= 0.97, decision.row()
    assert decision.extra["unavailable"] == 0, decision.row()


# Issue #36 §6, the full null: no effect anywhere (β_A = β_B = β_force = 0, every disclosure
# contrast 0). Every finding of OPB-01 §8 is then false. Each rule needs a directional claim
# ("> 0" or "< 0") read from a two-sided 95 % interval, so each finding is promised at most
# the one-sided 2.5 %; the table has no multiplicity control across rules, and the five
# distinct claims its findings rest on (β_B > 0, β_A > 0, β_LF > 0, β_force > 0,
# F_att_SPXI_vs_plain < 0) bound "some finding" by 5 × 2.5 % (Bonferroni). Both are asserted,
# with three Monte Carlo SEs of slack.
def test_under_the_full_null_each_finding_is_as_rare_as_its_intervals_promise(
    calibration_table,
):
    rates = designs.full_null_rates(runs=RUNS)
    shares = ", ".join(f"{k} {100 * v:.1f} %" for k, v in rates.items() if k != "runs")
    calibration_table(
        f"| full null (0.0, 0.0), β_force 0, disclosure contrasts 0, {rates['runs']} runs "
        f"| {shares} |"
    )
    assert rates["runs"] >= 0.99 * RUNS, rates

    def bound(p):
        return p + 3 * (p * (1 - p) / rates["runs"]) ** 0.5

    for key, value in rates.items():
        if key.startswith("OPB01-"):
            assert value <= bound(0.025), (key, rates)
    assert rates.get("any finding", 0) <= bound(5 * 0.025), rates
    assert rates.get("contradictory", 0) <= 0.005, rates
