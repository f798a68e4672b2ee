"""Paired within-task-block contrasts of a factorial design (seed 002, "Record and score").

Seed 002 randomises a 2×2×2 design inside *task blocks*: every block (one task given to one
model in one round) holds each of the D = 8 design combinations once, so every factor's effect
can be measured as a difference *within* a block, and the block is the unit of independence
("paired task differences with confidence intervals clustered by task block").

For one endpoint the data are a ``blocks × conditions`` matrix ``Y`` (NaN where a condition of
the block has no endpoint value: an infrastructure failure, say). A contrast is a weight vector
``w`` over the conditions; block b's paired difference is ``d_b = Y_b · w``:

- a factor's main effect, levels (l0, l1): ``w = c / (D/2)`` with ``c = +1`` at l1, ``−1`` at
  l0 — the mean over the block's l1 conditions minus the mean over its l0 conditions
  (Montgomery 2017, *Design and Analysis of Experiments*, 9th ed., §6.2: the effect of a factor
  in a 2^k design is the average response at its high level minus that at its low level);
- a two-factor interaction f × g: ``w = c_f · c_g / (D/4)``, the difference of f's effect at
  g's high level and at its low level (Montgomery §6.2, "AB interaction"; this is twice the
  regression coefficient of the ±1-coded product).

A block contributes to an endpoint's contrasts only when every condition has a value
(complete-case by block): dropping a single condition would confound the other factors with the
contrast. Blocks left out are counted, never imputed.

Intervals over the B contributing blocks, side by side:

- a **block-clustered bootstrap** — blocks drawn with replacement, each bringing its whole
  paired difference (Davison & Hinkley 1997, *Bootstrap Methods and their Application*, §3.8):
  the studentised bootstrap-t (``bootstrap.studentized_interval``, the method the calibration in
  docs/analysis.md supports) or the plain percentile interval, drawn with
  ``bootstrap.cluster_weights``; all contrasts of one endpoint share one draw matrix;
- the **paired t interval** ``d̄ ± t₍B−1, 1−α/2₎ · s_d/√B`` (Student 1908; computed by
  ``scipy.stats.ttest_1samp(d).confidence_interval``).
- for a **0/1 endpoint**, a main or simple effect is a difference of paired proportions over
  the conditions matched on every other factor (``Contrast.pairs``), with Newcombe's paired
  score interval (Newcombe 1998, method 10: ``stats.paired.newcombe_paired_interval``), never
  zero-width; it is ``ContrastResult.interval``, the one decisions read (docs/analysis.md: the
  block bootstrap-t covered 79–81 % at an event rate of 0.5 %, the score interval 98.6–99.2 %).
  Where tasks repeat over rounds, it is computed on the pairs' design-effect effective number
  (Korn & Graubard 1998), clustered by task, or by task and round (``clustered_score_interval``).
- where tasks repeat over rounds (``paired_contrasts(tasks=…, rounds=…)``), intervals are
  clustered by task, and with enough tasks and rounds by both (Cameron, Gelbach & Miller 2011,
  ``clustered_mean_variance``): blocks of one task, or of one round, share its effect.

Pure: numpy arrays in, dataclasses out; no ORM, no settings.
"""

from __future__ import annotations

import itertools
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from apps.analysis.stats.bootstrap import (
    cluster_standard_error,
    cluster_weights,
    percentile_interval,
    replicate_means,
    studentized_interval,
)
from apps.analysis.stats.checks import check_confidence
from apps.analysis.stats.paired import newcombe_paired_interval

BootstrapMethod = Literal["studentized", "percentile"]
BOOTSTRAP_METHODS = ("studentized", "percentile")
# Fewer contributing blocks than this and no interval is given: a paired t with one degree of
# freedom and a bootstrap over two blocks say nothing. A plan's minimum may raise it.
MIN_BLOCKS_FLOOR = 10
NO_SPREAD = (
    "interval unavailable: every complete task block has the same paired difference, so there is "
    "no spread to form an interval from (a zero-width interval would claim certainty)"
)
NO_SPREAD_SCORE = (
    "bootstrap and t intervals unavailable: every complete task block has the same paired "
    "difference; the 0/1 endpoint's score interval (Newcombe 1998) is reported instead"
)


@dataclass(frozen=True)
class Contrast:
    """A named contrast: ``weights`` over the conditions (length D), what it compares, and its
    kind: ``main`` (a factor's main effect), ``interaction`` or ``simple`` (a factor's effect
    within one level of another factor)."""

    name: str
    weights: tuple[float, ...]
    meaning: str = ""
    group: str = "main"
    # (low, high) condition columns matched on every other factor, when the contrast is the
    # mean of high − low over those pairs (main and simple effects; not interactions): a 0/1
    # endpoint's contrast is then a difference of paired proportions (``score_interval``).
    pairs: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class ContrastResult:
    """One contrast of one endpoint: the mean paired difference over ``n_blocks`` complete
    blocks, the bootstrap and paired-t intervals (None with ``note`` when unavailable), the
    standard deviation of the differences and the number of blocks left out as incomplete."""

    name: str
    estimate: float | None
    bootstrap_interval: tuple[float, float] | None
    t_interval: tuple[float, float] | None
    sd: float | None
    n_blocks: int
    n_incomplete: int
    note: str = ""
    score_interval: tuple[float, float] | None = None
    # Where tasks repeat over rounds: the clustering of the score interval's design effect
    # ("task" or "task and round"), and the two-way (task, round) cluster-robust t interval.
    score_clustering: str = ""
    two_way_interval: tuple[float, float] | None = None

    @property
    def interval(self) -> tuple[float, float] | None:
        """The interval a decision reads: a 0/1 endpoint's score interval where there is one
        (the block bootstrap-t covered 79–81 % for a 0/1 endpoint at 0.5 %, the score interval
        98.6–99.2 %: docs/analysis.md), else the two-way (task, round) clustered interval where
        tasks and rounds are both crossed and numerous enough, else the bootstrap interval."""
        if self.score_interval is not None:
            return self.score_interval
        if self.two_way_interval is not None:
            return self.two_way_interval
        return self.bootstrap_interval

    @property
    def interval_method(self) -> str:
        if self.score_interval is not None and self.score_clustering:
            return (
                "Newcombe paired score interval (Newcombe 1998, method 10) on the pairs' "
                f"effective number, design effect clustered by {self.score_clustering} "
                "(Korn & Graubard 1998)"
            )
        if self.score_interval is not None:
            return "Newcombe paired score interval (Newcombe 1998, method 10)"
        if self.two_way_interval is not None:
            return (
                "two-way (task, round) cluster-robust t interval (Cameron, Gelbach & Miller 2011)"
            )
        return "block bootstrap"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "estimate": self.estimate,
            "bootstrap_interval": None
            if self.bootstrap_interval is None
            else list(self.bootstrap_interval),
            "t_interval": None if self.t_interval is None else list(self.t_interval),
            "sd": self.sd,
            "n_blocks": self.n_blocks,
            "n_incomplete": self.n_incomplete,
            "note": self.note,
            "score_interval": None if self.score_interval is None else list(self.score_interval),
            "interval": None if self.interval is None else list(self.interval),
            "interval_method": self.interval_method,
        } | (
            {}
            if self.two_way_interval is None
            else {"two_way_interval": list(self.two_way_interval)}
        )


@dataclass(frozen=True)
class PairedResult:
    contrasts: list[ContrastResult] = field(default_factory=list)


def factor_contrasts(
    conditions: list[dict[str, str]],
    factors: dict[str, tuple[str, str]],
    interactions: Sequence[tuple[str, str]] = (),
) -> list[Contrast]:
    """Main-effect contrasts of every factor and the listed two-factor interactions.

    The 2^k effect and interaction contrasts of Montgomery 2017, *Design and Analysis of
    Experiments*, 9th ed., §6.2 (module docstring).

    Args:
        conditions: the D design combinations, in column order, each ``{factor: level}``.
        factors: factor name → (low level, high level); the contrast is high − low.
        interactions: pairs of factor names.

    Raises:
        ValueError: a condition lacks a factor or has a level outside the factor's two; the
            conditions are not the full crossing (each combination exactly once); an
            interaction names an unknown factor or the same factor twice.
    """
    names = sorted(factors)
    expected = set(itertools.product(*(factors[n] for n in names)))
    seen = []
    for index, condition in enumerate(conditions):
        for name in names:
            if condition.get(name) not in factors[name]:
                raise ValueError(
                    f"condition {index + 1} has {name}={condition.get(name)!r}, not one of "
                    f"{', '.join(factors[name])}"
                )
        seen.append(tuple(condition[n] for n in names))
    if len(seen) != len(expected) or set(seen) != expected:
        raise ValueError(
            f"the conditions must be the full crossing of {', '.join(names)} "
            f"({len(expected)} combinations, each once); got {len(seen)}"
        )
    d = len(conditions)
    codes = {
        name: np.array([1.0 if c[name] == factors[name][1] else -1.0 for c in conditions])
        for name in names
    }
    out = [
        Contrast(
            name,
            tuple(float(x) for x in codes[name] / (d / 2)),
            f"{name}: {factors[name][1]} − {factors[name][0]}",
            pairs=_matched_pairs(conditions, name, factors[name], range(d)),
        )
        for name in names
    ]
    for first, second in interactions:
        if first not in factors or second not in factors or first == second:
            raise ValueError(f"interaction {first}×{second} must name two different factors")
        out.append(
            Contrast(
                f"{first}×{second}",
                tuple(float(x) for x in codes[first] * codes[second] / (d / 4)),
                f"the {first} effect at {second}={factors[second][1]} minus at "
                f"{second}={factors[second][0]}",
                group="interaction",
            )
        )
    return out


def simple_effect_name(factor: str, other: str, level: str) -> str:
    """The name of ``factor``'s simple effect at ``other`` = ``level``, usable as (part of) a
    decision-table estimate name: ``friction_at_alternate_present``."""
    return "_at_".join((factor, "_".join((other, re.sub(r"[^A-Za-z0-9]+", "_", level)))))


def simple_effects(
    conditions: list[dict[str, str]], factors: dict[str, tuple[str, str]]
) -> list[Contrast]:
    """Every factor's simple effect within each level of every other factor.

    The simple effect of f at g = l is f's high − low difference among the conditions with
    g = l, averaged over the remaining factors: ``w = c_f · [g = l] / (D/4)`` (Montgomery 2017,
    *Design and Analysis of Experiments*, 9th ed., §5.3 and §6.2: the effect of one factor at
    each level of another, whose difference is the AB interaction; Kirk 2013, *Experimental
    Design*, 4th ed., §9.6 "simple effects"). Within a task block it is a paired difference like
    every other contrast. ``conditions`` and ``factors`` as for :func:`factor_contrasts` (which
    checks them); in factor-name order, then the other factor's, then its levels in order.
    """
    names = sorted(factors)
    d = len(conditions)
    codes = {
        name: np.array([1.0 if c[name] == factors[name][1] else -1.0 for c in conditions])
        for name in names
    }
    out = []
    for factor in names:
        for other in names:
            if other == factor:
                continue
            for level in factors[other]:
                at = np.array([1.0 if c[other] == level else 0.0 for c in conditions])
                within = [i for i, c in enumerate(conditions) if c[other] == level]
                out.append(
                    Contrast(
                        simple_effect_name(factor, other, level),
                        tuple(float(x) for x in codes[factor] * at / (d / 4)),
                        f"{factor}: {factors[factor][1]} − {factors[factor][0]} at {other}={level}",
                        group="simple",
                        pairs=_matched_pairs(conditions, factor, factors[factor], within),
                    )
                )
    return out


def _matched_pairs(
    conditions: list[dict[str, str]],
    factor: str,
    levels: tuple[str, str],
    columns: Sequence[int] | range,
) -> tuple[tuple[int, int], ...]:
    """(low, high) columns among ``columns`` that differ in ``factor`` only."""
    key = {
        i: tuple(sorted((k, v) for k, v in conditions[i].items() if k != factor)) for i in columns
    }
    high = {key[i]: i for i in columns if conditions[i][factor] == levels[1]}
    return tuple(
        (i, high[key[i]]) for i in columns if conditions[i][factor] == levels[0] and key[i] in high
    )


def paired_contrasts(  # noqa: PLR0913 (keyword-only options: the clusters, the bootstrap)
    values: np.ndarray,
    contrasts: list[Contrast],
    *,
    replicates: int,
    confidence: float,
    seed: int,
    method: BootstrapMethod = "studentized",
    min_blocks: int = MIN_BLOCKS_FLOOR,
    tasks: Sequence[Any] | None = None,
    rounds: Sequence[Any] | None = None,
) -> PairedResult:
    """Within-block paired differences of ``contrasts`` with block-clustered intervals.

    With ``tasks`` (the task fixture of each block, where tasks repeat over rounds), the
    intervals are clustered by task instead: blocks of one task share its task effect, so they
    are not independent (issue #36: 64 blocks of 8 tasks treated as independent covered 80–88 %
    at 95 %). The bootstrap-t then resamples tasks (each bringing all its blocks; the estimate
    is still the mean over blocks, a ratio estimator), and the t interval uses the
    cluster-robust (CR1) standard error of that mean with t(G − 1) critical values over G tasks
    (Cameron & Miller 2015, J. Hum. Resour. 50(2) §II.C, §VI). The floor applies to the tasks:
    with fewer than ``max(min_blocks, MIN_BLOCKS_FLOOR)``, the bootstrap interval is the exact
    sign-flip interval over the task means (:func:`subset_means_interval`, from 6 tasks at 95 %)
    and there is no t interval; with fewer still, no interval, with the reason. A 0/1
    endpoint's score interval is then Newcombe's on the pairs' design-effect effective number
    (:func:`clustered_score_interval`: clustered as the t interval is), the interval decisions
    read.

    With ``rounds`` as well (the round of each block), where at least
    ``TWO_WAY_MIN_CLUSTERS`` tasks and rounds are crossed, blocks of one round share its effect
    too (a provider change, a time of day): ``two_way_interval`` is the two-way cluster-robust
    t interval (:func:`clustered_mean_variance`, Cameron, Gelbach & Miller 2011), the interval
    a non-0/1 endpoint's decision reads, and the score interval's design effect is two-way.
    With fewer rounds the clustering is by task only, round effects taken as fixed (the
    estimate is for the rounds run), and ``note`` says so.

    Block bootstrap-t (Davison & Hinkley 1997 §5.2.1, §3.8) or percentile (Efron & Tibshirani
    1993 §13.3), beside the paired t interval (Student 1908); see the module docstring.

    Args:
        values: ``blocks × D`` float array of one endpoint (NaN: no value for that condition
            of that block). Units are the endpoint's own (a 0/1 indicator, items completed, …).
        contrasts: from :func:`factor_contrasts` (weights of length D).
        replicates: bootstrap resamples of blocks (≥ 1).
        confidence: interval coverage in (0, 1), e.g. 0.95.
        seed: seeds ``numpy.random.default_rng`` for the draw matrix.
        method: ``"studentized"`` (bootstrap-t) or ``"percentile"``.
        tasks: optional length-``blocks`` task labels; given, intervals are clustered by task.
        rounds: optional length-``blocks`` round labels (with ``tasks`` only); given, the
            two-way interval described above.
        min_blocks: fewer complete blocks than ``max(min_blocks, MIN_BLOCKS_FLOOR)`` and the
            intervals are None, with the reason in ``note``.

    Returns:
        :class:`PairedResult`, one :class:`ContrastResult` per contrast, in order.

    Raises:
        ValueError: ``values`` is not 2-D, a contrast's length differs from D, infinite
            values, ``confidence`` outside (0, 1), replicates < 1 or an unknown method.
    """
    y = np.asarray(values, dtype=float)
    if y.ndim != 2:
        raise ValueError(f"values must be blocks × conditions, got shape {y.shape}")
    if np.isinf(y).any():
        raise ValueError("values must be finite or NaN")
    check_confidence(confidence)
    if replicates < 1:
        raise ValueError(f"replicates must be >= 1, got {replicates}")
    if method not in BOOTSTRAP_METHODS:
        raise ValueError(f"method must be one of {BOOTSTRAP_METHODS}, got {method!r}")
    weights = np.array([c.weights for c in contrasts], dtype=float).reshape(len(contrasts), -1)
    if contrasts and weights.shape[1] != y.shape[1]:
        raise ValueError(
            f"contrasts have {weights.shape[1]} weights but values have {y.shape[1]} conditions"
        )
    complete = ~np.isnan(y).any(axis=1)
    n = int(complete.sum())
    incomplete = int(y.shape[0] - n)
    needed = max(min_blocks, MIN_BLOCKS_FLOOR)
    if n == 0:
        return PairedResult(
            [
                ContrastResult(c.name, None, None, None, None, 0, incomplete, "no complete block")
                for c in contrasts
            ]
        )
    diffs = y[complete] @ weights.T  # n × k paired differences
    means = diffs.mean(axis=0)
    sds = diffs.std(axis=0, ddof=1) if n > 1 else np.full(len(contrasts), np.nan)
    if rounds is not None and (tasks is None or len(rounds) != y.shape[0]):
        raise ValueError(
            f"rounds needs tasks and one label per block ({y.shape[0]}), got "
            f"{len(rounds)} labels{'' if tasks is not None else ' without tasks'}"
        )
    if tasks is not None:
        if len(tasks) != y.shape[0]:
            raise ValueError(f"tasks has {len(tasks)} labels but values have {y.shape[0]} blocks")
        settings = _Settings(replicates, confidence, seed, method)
        labels = np.asarray(tasks, dtype=object)[complete]
        round_labels = None if rounds is None else np.asarray(rounds, dtype=object)[complete]
        return _task_clustered(
            diffs, labels, round_labels, y[complete], contrasts, incomplete, needed, settings
        )
    if n < needed:
        note = f"interval unavailable: {n} complete task blocks, fewer than the minimum of {needed}"
        return PairedResult(
            [
                ContrastResult(
                    c.name, float(means[j]), None, None, _finite(sds[j]), n, incomplete, note
                )
                for j, c in enumerate(contrasts)
            ]
        )
    draws = cluster_weights(n, replicates, np.random.default_rng(seed))
    sizes = np.ones(n)
    out = []
    boot_means = (draws.astype(float) @ diffs) / n if method == "percentile" else None
    scores = _score_intervals(y[complete], contrasts, confidence)
    for j, contrast in enumerate(contrasts):
        column = diffs[:, j]
        if not sds[j] > 0:
            # Every block has the same paired difference (a 0/1 endpoint with no event in any
            # block, say): both intervals would be the point itself (issue #36 §4); a 0/1
            # endpoint's score interval is still informative (never zero-width).
            note = NO_SPREAD if scores[j] is None else NO_SPREAD_SCORE
            out.append(
                ContrastResult(
                    contrast.name,
                    float(means[j]),
                    None,
                    None,
                    0.0,
                    n,
                    incomplete,
                    note,
                    scores[j],
                )
            )
            continue
        if boot_means is None:  # method == "studentized" (checked above)
            boot, _, _ = studentized_interval(
                draws, column, sizes, float(means[j]), "cluster_mean", confidence
            )
        else:
            boot = percentile_interval(boot_means[:, j], confidence)
        ci = scipy_stats.ttest_1samp(column, 0.0).confidence_interval(confidence)
        out.append(
            ContrastResult(
                contrast.name,
                float(means[j]),
                (float(boot[0]), float(boot[1])),
                (float(ci.low), float(ci.high)),
                float(sds[j]),
                n,
                incomplete,
                "",
                scores[j],
            )
        )
    return PairedResult(out)


def _score_intervals(
    y: np.ndarray,
    contrasts: list[Contrast],
    confidence: float,
    tasks: np.ndarray | None = None,
    rounds: np.ndarray | None = None,
) -> list[tuple[float, float] | None]:
    """Per contrast, Newcombe's paired score interval when the endpoint is 0/1 and the contrast
    is a mean of matched high − low pairs (``Contrast.pairs``); None otherwise.

    The pairs are every complete block's (low, high) conditions of the contrast, in one paired
    2×2 table (``stats.paired.newcombe_paired_interval``): its mean of high − low is the
    contrast's estimate. Without ``tasks`` they are taken as independent (the calibration suite
    measures the coverage in seed 002's design); with ``tasks`` (integer codes per block, and
    ``rounds`` for two-way clustering), on their design-effect effective number
    (:func:`clustered_score_interval`).
    """
    if y.size == 0 or not np.isin(y, (0.0, 1.0)).all():
        return [None] * len(contrasts)
    out: list[tuple[float, float] | None] = []
    for contrast in contrasts:
        if not contrast.pairs:
            out.append(None)
            continue
        low = y[:, [i for i, _ in contrast.pairs]] == 1.0
        high = y[:, [j for _, j in contrast.pairs]] == 1.0
        if tasks is not None:
            out.append(clustered_score_interval(low, high, tasks, rounds, confidence)[0])
            continue
        low, high = low.ravel(), high.ravel()
        out.append(
            newcombe_paired_interval(
                int(np.sum(high & low)),
                int(np.sum(high & ~low)),
                int(np.sum(~high & low)),
                int(np.sum(~high & ~low)),
                confidence=confidence,
            )
        )
    return out


# Two-way (task, round) clustering needs at least this many tasks and rounds. With fewer
# rounds a round variance component is barely estimable (t(G − 1) with G = 4 rounds takes
# 3.2 standard errors: 98–100 % coverage measured at 16 tasks × 4 rounds), so the rounds are
# taken as fixed — the estimate is for the rounds run, each round holding every task and
# condition — and blocks are clustered by task only, with a note (Cameron & Miller 2015,
# J. Hum. Resour. 50(2), "Multiway clustering": effects of one dimension taken as fixed, the
# inference clusters on the other).
TWO_WAY_MIN_CLUSTERS = 6


def clustered_mean_variance(
    totals: np.ndarray,
    sizes: np.ndarray,
    first: np.ndarray,
    second: np.ndarray | None = None,
) -> tuple[float, int]:
    """Cluster-robust variance of the ratio mean Σ totals / Σ sizes, clustered one or two ways.

    One way (``first`` only): the CR1 linearisation of ``bootstrap.cluster_standard_error``,
    V₁ = G/(G − 1) · Σ_g (Σ_{b∈g} r_b)² / (Σ_b m_b)², r_b = t_b − θ̂ m_b. Two ways (tasks and
    rounds crossed): V = V_task + V_round − V_task∩round, each term CR1 over its own clusters
    (Cameron, Gelbach & Miller 2011, "Robust inference with multiway clustering", *JBES*
    29:238–249, eq. 2.13, with their G/(G − 1) corrections), not allowed below either one-way
    variance (the population two-way variance is at least each; CGM 2011 §2.3 discuss an
    estimate that is not positive), with min(G_task, G_round) − 1 degrees of freedom for t
    critical values (CGM 2011 §2.4; Cameron & Miller 2015, *J. Hum. Resour.* 50(2) §VI).

    Args:
        totals: length-B per-block totals (a block's paired difference, or its pairs' sum).
        sizes: length-B positive block sizes (1, or the block's number of pairs).
        first: length-B integer codes 0…G₁ − 1 (the tasks), G₁ ≥ 2.
        second: optional length-B integer codes 0…G₂ − 1 (the rounds), G₂ ≥ 2.

    Returns:
        ``(variance, degrees of freedom)``; variance in the squared units of the mean.
    """
    t = np.asarray(totals, dtype=float)
    m = np.asarray(sizes, dtype=float)
    resid = t - (t.sum() / m.sum()) * m
    scale = m.sum() ** 2

    def one_way(codes: np.ndarray) -> tuple[float, int]:
        _, inverse = np.unique(codes, return_inverse=True)
        groups = int(inverse.max()) + 1
        if groups < 2:
            return 0.0, groups
        sums = np.bincount(inverse, weights=resid, minlength=groups)
        return float(groups / (groups - 1) * np.sum(sums**2) / scale), groups

    v1, g1 = one_way(np.asarray(first))
    if second is None:
        return v1, g1 - 1
    v2, g2 = one_way(np.asarray(second))
    both = np.asarray(first, dtype=np.int64) * (int(np.max(second)) + 1) + np.asarray(second)
    v12, _ = one_way(both)
    return max(v1 + v2 - v12, v1, v2), min(g1, g2) - 1


def clustered_score_interval(
    low: np.ndarray,
    high: np.ndarray,
    tasks: np.ndarray,
    rounds: np.ndarray | None,
    confidence: float,
) -> tuple[tuple[float, float], float]:
    """Newcombe's paired score interval on the pairs' design-effect effective number.

    Korn & Graubard's effective sample size (1998, *Survey Methodology* 24:193–201; as
    ``stats.proportions.korn_graubard_interval``) carried to paired proportions: with N pairs
    of 0/1 values z = high − low, θ̂ = mean z, the design effect is
    deff = V / [Σ(z − θ̂)² / N / (N − 1)], V the cluster-robust variance of θ̂
    (:func:`clustered_mean_variance`, by task, or by task and round), never below 1; the paired
    2×2 counts are scaled by (1/deff) · (t₍N−1₎ / t₍df₎)² (the degrees-of-freedom adjustment
    of Korn & Graubard, df those of V) and given to ``newcombe_paired_interval`` (Newcombe
    1998, method 10: Wilson limits, never zero-width). Dividing counts by the design effect is
    Rao & Scott's (1992, "A simple method for the analysis of clustered binary data",
    *Biometrics* 48:577–585). Both factors only shrink the effective counts, so the interval is
    never narrower than the score interval on the effective pairs' own t(df) scale: the
    calibration suite measures its coverage (docs/analysis.md).

    Args:
        low, high: ``blocks × pairs`` boolean arrays, the event under each pair's low and high
            member.
        tasks: length-``blocks`` integer codes (≥ 2 distinct); ``rounds`` likewise or None.
        confidence: nominal coverage in (0, 1).

    Returns:
        ``((lower, upper), design effect)``: the interval for the mean of high − low.
    """
    z = high.astype(float) - low.astype(float)
    n = z.size
    theta = float(z.mean())
    variance, df = clustered_mean_variance(
        z.sum(axis=1), np.full(z.shape[0], float(z.shape[1])), tasks, rounds
    )
    srs = float(np.mean((z - theta) ** 2)) / (n - 1) if n > 1 else 0.0
    design_effect = max(variance / srs, 1.0) if srs > 0 and variance > 0 else 1.0
    scale = 1.0 / design_effect
    tail = (1.0 - confidence) / 2.0
    if n > 1 and df >= 1:
        ratio = scipy_stats.t.ppf(1 - tail, n - 1) / scipy_stats.t.ppf(1 - tail, df)
        scale *= float(ratio) ** 2
    counts = (
        float(np.sum(high & low)),
        float(np.sum(high & ~low)),
        float(np.sum(~high & low)),
        float(np.sum(~high & ~low)),
    )
    interval = newcombe_paired_interval(*(c * scale for c in counts), confidence=confidence)
    return interval, design_effect


@dataclass(frozen=True)
class _Settings:
    replicates: int
    confidence: float
    seed: int
    method: BootstrapMethod


def _task_clustered(
    diffs: np.ndarray,
    tasks: np.ndarray,
    rounds: np.ndarray | None,
    y: np.ndarray,
    contrasts: list[Contrast],
    incomplete: int,
    needed: int,
    settings: _Settings,
) -> PairedResult:
    """:func:`paired_contrasts` clustered by task, or by task and round (see its docstring).
    ``y``: the complete blocks' values, for a 0/1 endpoint's clustered score intervals."""
    confidence = settings.confidence
    means = diffs.mean(axis=0)
    sds = diffs.std(axis=0, ddof=1) if diffs.shape[0] > 1 else np.full(len(contrasts), np.nan)
    codes, labels = pd.factorize(pd.Series(tasks), sort=True)
    g, n = len(labels), diffs.shape[0]
    round_codes, round_note = _two_way_rounds(rounds, codes, g)
    sums = np.zeros((g, diffs.shape[1]))
    np.add.at(sums, codes, diffs)
    sizes = np.bincount(codes, minlength=g).astype(float)
    if g < needed and subset_means_interval(np.zeros(g), confidence) is None:
        note = (
            f"interval unavailable: {g} task fixtures contributed ({n} complete blocks), fewer "
            f"than the minimum of {needed} clusters, and too few for the sign-flip interval"
        )
        return PairedResult(
            [
                ContrastResult(
                    c.name, float(means[j]), None, None, _finite(sds[j]), n, incomplete, note
                )
                for j, c in enumerate(contrasts)
            ]
        )
    scores = _score_intervals(y, contrasts, confidence, codes, round_codes)
    if g < needed:
        base = _few_tasks(diffs, codes, g, contrasts, incomplete, confidence, scores).contrasts
    else:
        base = _task_bootstrap(diffs, sums, sizes, g, contrasts, incomplete, settings, scores)
    out = []
    for j, result in enumerate(base):
        two_way = None
        if round_codes is not None and result.estimate is not None:
            variance, df = clustered_mean_variance(diffs[:, j], np.ones(n), codes, round_codes)
            if variance > 0:
                critical = float(scipy_stats.t.ppf(0.5 + confidence / 2, df))
                half = critical * variance**0.5
                two_way = (result.estimate - half, result.estimate + half)
        out.append(
            replace(
                result,
                score_interval=scores[j],
                score_clustering=""
                if scores[j] is None
                else ("task" if round_codes is None else "task and round"),
                two_way_interval=two_way,
                note="; ".join(x for x in (result.note, round_note) if x),
            )
        )
    return PairedResult(out)


def _two_way_rounds(
    rounds: np.ndarray | None, tasks: np.ndarray, g: int
) -> tuple[np.ndarray | None, str]:
    """The rounds' integer codes where two-way clustering applies (at least
    ``TWO_WAY_MIN_CLUSTERS`` tasks and rounds, and some task in several rounds), else None;
    and the note the results carry."""
    if rounds is None:
        return None, ""
    codes, labels = pd.factorize(pd.Series(rounds), sort=True)
    r = len(labels)
    crossed = len(set(zip(tasks.tolist(), codes.tolist(), strict=True))) > max(g, r)
    if not crossed:
        return None, "clustered by task only: the rounds are not crossed with the tasks"
    if g >= TWO_WAY_MIN_CLUSTERS and r >= TWO_WAY_MIN_CLUSTERS:
        return codes, f"clustered by task and round (two-way): {g} tasks × {r} rounds"
    return None, (
        f"clustered by task only: {g} tasks and {r} rounds, fewer than "
        f"{TWO_WAY_MIN_CLUSTERS} of either to cluster by round as well; round effects are "
        "taken as fixed (the estimate is for the rounds run)"
    )


def _task_bootstrap(
    diffs: np.ndarray,
    sums: np.ndarray,
    sizes: np.ndarray,
    g: int,
    contrasts: list[Contrast],
    incomplete: int,
    settings: _Settings,
    scores: list[tuple[float, float] | None],
) -> list[ContrastResult]:
    """From ``MIN_BLOCKS_FLOOR`` tasks: the task bootstrap-t (or percentile) interval and the
    task-clustered CR1 t interval of each contrast."""
    confidence, method = settings.confidence, settings.method
    n = diffs.shape[0]
    means = diffs.mean(axis=0)
    sds = diffs.std(axis=0, ddof=1) if n > 1 else np.full(len(contrasts), np.nan)
    draws = cluster_weights(g, settings.replicates, np.random.default_rng(settings.seed))
    critical = float(scipy_stats.t.ppf(0.5 + confidence / 2, g - 1))
    out = []
    for j, contrast in enumerate(contrasts):
        mean = float(means[j])
        se = cluster_standard_error(sums[:, j], sizes, mean, "observation")
        if se == 0.0:
            out.append(_no_spread(contrast.name, mean, 0.0, n, incomplete, scores[j]))
            continue
        if method == "percentile":
            boot = percentile_interval(
                replicate_means(draws, sums[:, j], sizes, "observation"), confidence
            )
        else:
            boot, _, _ = studentized_interval(
                draws, sums[:, j], sizes, mean, "observation", confidence
            )
        out.append(
            ContrastResult(
                contrast.name,
                mean,
                (float(boot[0]), float(boot[1])),
                (mean - critical * se, mean + critical * se),
                float(sds[j]),
                n,
                incomplete,
                f"clustered by task: {g} tasks",
            )
        )
    return out


# Above this many tasks the 2^G subsets are not enumerated (the bootstrap-t applies from 10).
SUBSET_MAX_TASKS = 16


def subset_means_interval(
    cluster_means: np.ndarray, confidence: float
) -> tuple[float, float] | None:
    """The exact sign-flip (randomisation) interval for the centre of G cluster means.

    Hartigan 1969, "Using subsample values as typical values", *JASA* 64:1303–1317: for G
    independent values symmetric about θ, the 2^G − 1 means of the non-empty subsets cut the
    line into 2^G intervals, each holding θ with probability 2^−G; from the k-th smallest to the
    k-th largest subset mean, k = ⌊(1 − confidence)·2^G / 2⌋, covers 1 − 2k/2^G ≥ ``confidence``.
    It is the test inversion of the cluster sign-change test (Canay, Romano & Shaikh 2017,
    "Randomization tests under an approximate symmetry assumption", *Econometrica*
    85:1013–1030: valid with few clusters), equivalently the wild cluster bootstrap with
    Rademacher weights enumerated over all 2^G sign vectors (Cameron, Gelbach & Miller 2008).

    Args:
        cluster_means: 1-D array of G cluster-level estimates (a task's mean paired
            difference), in the contrast's units.
        confidence: nominal coverage in (0, 1).

    Returns:
        (lower, upper), or None when k = 0 (too few clusters for ``confidence``: fewer than 6
        at 95 %) or G > ``SUBSET_MAX_TASKS``.
    """
    m = np.asarray(cluster_means, dtype=float).ravel()
    g = m.size
    if g > SUBSET_MAX_TASKS:
        return None
    k = int(np.floor((1 - confidence) * 2**g / 2))
    if k < 1:
        return None
    masks = ((np.arange(1, 2**g)[:, None] >> np.arange(g)) & 1).astype(float)
    means = np.sort((masks @ m) / masks.sum(axis=1))
    return (float(means[k - 1]), float(means[-k]))


def _few_tasks(
    diffs: np.ndarray,
    codes: np.ndarray,
    g: int,
    contrasts: list[Contrast],
    incomplete: int,
    confidence: float,
    scores: list[tuple[float, float] | None],
) -> PairedResult:
    """Fewer tasks than the bootstrap-t's floor (seed 002's 8 per sub-study): the exact
    sign-flip interval over the task means (:func:`subset_means_interval`; 95.3 % nominal at 8
    tasks, 94.8–95.4 % measured at 8 tasks × 8 rounds, docs/analysis.md); no t interval."""
    n = diffs.shape[0]
    means = diffs.mean(axis=0)
    sds = diffs.std(axis=0, ddof=1) if n > 1 else np.full(len(contrasts), np.nan)
    sizes = np.bincount(codes, minlength=g).astype(float)
    task_means = np.zeros((g, diffs.shape[1]))
    np.add.at(task_means, codes, diffs)
    task_means /= sizes[:, None]
    out = []
    for j, contrast in enumerate(contrasts):
        mean = float(means[j])
        interval = subset_means_interval(task_means[:, j], confidence)
        if interval is None or not np.ptp(task_means[:, j]) > 0:
            out.append(_no_spread(contrast.name, mean, _finite(sds[j]), n, incomplete, scores[j]))
            continue
        out.append(
            ContrastResult(
                contrast.name,
                mean,
                interval,
                None,
                _finite(sds[j]),
                n,
                incomplete,
                f"clustered by task: {g} tasks, exact sign-flip interval over the task means",
            )
        )
    return PairedResult(out)


def _no_spread(
    name: str,
    mean: float,
    sd: float | None,
    n: int,
    incomplete: int,
    score: tuple[float, float] | None,
) -> ContrastResult:
    """No spread over the clusters: no bootstrap or t interval; a 0/1 endpoint's score
    interval where there is one (never zero-width)."""
    note = NO_SPREAD if score is None else NO_SPREAD_SCORE
    return ContrastResult(name, mean, None, None, sd, n, incomplete, note, score)


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


@dataclass(frozen=True)
class MixedModelContrast:
    """One contrast from the linear mixed model over every observed value (incomplete blocks
    kept): estimate, Wald interval, the blocks and values it used, whether it converged, and
    why it could not be fitted (``note``, estimate None)."""

    name: str
    estimate: float | None
    interval: tuple[float, float] | None
    n_blocks: int
    n_values: int
    converged: bool
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": "linear mixed model, random intercept per task block (REML)",
            "estimate": self.estimate,
            "interval": None if self.interval is None else list(self.interval),
            "n_blocks": self.n_blocks,
            "n_values": self.n_values,
            "converged": self.converged,
            "note": self.note,
        }


def mixed_model_contrasts(
    values: np.ndarray, contrasts: list[Contrast], *, confidence: float
) -> list[MixedModelContrast]:
    """The contrasts estimated from every observed value, incomplete blocks included: the
    sensitivity analysis beside the complete-block estimate when values are missing.

    Model: y_bc = μ_c + u_b + e_bc, one mean per condition c, a random intercept u_b ~ N(0, τ²)
    per task block, e_bc ~ N(0, σ²) (Laird & Ware 1982, "Random-effects models for longitudinal
    data", *Biometrics* 38:963–974), fitted by REML with statsmodels ``MixedLM``. A contrast is
    w·μ̂ with the Wald interval w·μ̂ ± z · √(w'Σw), Σ the fixed effects' covariance. Fitted by
    likelihood on all observed values, it is valid when values are missing at random given the
    condition and the block (ignorable missingness: Little & Rubin 2019, *Statistical Analysis
    with Missing Data*, 3rd ed., §6.2 and ch. 8), where the complete-block analysis also needs
    missingness unrelated to the outcome (missing completely at random) to be unbiased. For a
    0/1 endpoint it is the linear probability model.

    Args:
        values: ``blocks × D`` float array (NaN: no value), as :func:`paired_contrasts`.
        contrasts: weight vectors of length D.
        confidence: interval coverage in (0, 1).

    Returns one :class:`MixedModelContrast` per contrast; each says why when the model cannot be
    fitted (fewer than two blocks, a condition never observed, a singular fit).
    """
    import statsmodels.api as sm
    from scipy.stats import norm

    y = np.asarray(values, dtype=float)
    observed = ~np.isnan(y)
    blocks_used = int(observed.any(axis=1).sum())
    n_values = int(observed.sum())

    def failed(note: str) -> list[MixedModelContrast]:
        return [
            MixedModelContrast(c.name, None, None, blocks_used, n_values, False, note)
            for c in contrasts
        ]

    if blocks_used < 2:
        return failed("fewer than two task blocks with a value")
    if not observed.any(axis=0).all():
        return failed("a condition has no value in any block")
    rows, cols = np.nonzero(observed)
    exog = np.zeros((rows.size, y.shape[1]))
    exog[np.arange(rows.size), cols] = 1.0
    try:
        # A block variance at its boundary (τ² = 0, common for a 0/1 endpoint) is a valid fit,
        # and statsmodels warns about it; Powell's method reaches it where the gradient
        # methods stall, then L-BFGS as statsmodels' own fallback.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = sm.MixedLM(y[rows, cols], exog, groups=rows).fit(
                reml=True, method=["powell", "lbfgs"]
            )
        cov = np.asarray(fit.cov_params())[: y.shape[1], : y.shape[1]]
        means = np.asarray(fit.fe_params, dtype=float)
    except (ValueError, np.linalg.LinAlgError) as error:
        return failed(f"the mixed model could not be fitted: {error}")
    converged = bool(getattr(fit, "converged", True))
    z = float(norm.ppf(0.5 + confidence / 2))
    out = []
    for contrast in contrasts:
        w = np.asarray(contrast.weights, dtype=float)
        estimate = float(w @ means)
        variance = float(w @ cov @ w)
        if not np.isfinite(estimate) or not np.isfinite(variance) or variance < 0:
            out.append(
                MixedModelContrast(
                    contrast.name, None, None, blocks_used, n_values, False, "singular fit"
                )
            )
            continue
        half = z * variance**0.5
        out.append(
            MixedModelContrast(
                contrast.name,
                estimate,
                (estimate - half, estimate + half),
                blocks_used,
                n_values,
                converged,
                "" if converged else "the mixed model did not converge",
            )
        )
    return out
