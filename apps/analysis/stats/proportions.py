"""Rates of binary outcomes and categorical labels with clustered intervals that are never empty.

For example XSTest's final labels (full compliance / full refusal / partial refusal) per model,
with items (prompts) as the cluster, or OPB-01's refusal rate R per cell.

Interval: Korn, E. L. & Graubard, B. I. (1998), "Confidence intervals for proportions with
small expected number of positive counts estimated from survey data", Survey Methodology 24(2):
193–201 — the Clopper–Pearson (1934, Biometrika 26(4)) exact interval computed on the
effective sample size n* = n / deff (deff = v̂ / [p̂(1 − p̂)/(n − 1)], v̂ the cluster-robust
variance; the design effect is not allowed below 1), with n* further scaled by
(t₍ₙ₋₁₎/t₍K₋₁₎)² for the K − 1 degrees of freedom of a K-cluster variance, and x* = p̂·n* positive
counts. Dean & Pagano (2015, J. Surv. Stat. Methodol. 3(4)) compare it with the alternatives
and find it the one that keeps its coverage near 0 and 1. A count of 0 gives [0, u] with
u = 1 − (α/2)^(1/n*) > 0, never a zero-width interval (the percentile bootstrap's fault: every
replicate of a count of 0 is 0). Calibration: tests/calibration/, docs/analysis.md.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy.optimize import brentq, minimize_scalar
from scipy.special import betainc, betaln, expit, logit
from scipy.stats import beta as beta_distribution
from scipy.stats import chi2 as chi2_distribution
from scipy.stats import t as t_distribution

from apps.analysis.stats.bootstrap import (
    DEFAULT_REPLICATES,
    Aggregation,
    cluster_standard_error,
    unavailable_note,
)
from apps.analysis.stats.checks import check_confidence, cluster_codes, cluster_counts

METHOD = "Korn–Graubard: Clopper–Pearson on the design-effect effective sample size"
# The fewest clusters the calibration suite measured the interval at: it covers 99 % there
# (conservative, as Clopper–Pearson is), so 6 is a floor of evidence, not of failure.
RATE_MIN_CLUSTERS_FLOOR = 6

ALL_ROWS = "all"


@dataclass(frozen=True)
class RateInterval:
    """A rate with its Korn–Graubard interval (None below the minimum number of clusters)."""

    rate: float
    interval: tuple[float, float] | None
    effective_n: float | None
    design_effect: float | None
    n: int
    n_clusters: int
    confidence: float
    method: str = METHOD
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["interval"] = list(self.interval) if self.interval is not None else None
        return out

    def as_cell(self) -> dict[str, Any]:
        """The rate as a cell of a result document: ``estimate``, ``interval`` ([lower, upper]
        or None), ``n``, ``n_items`` (the clusters), ``interval_method``, and ``note`` when
        there is one."""
        out: dict[str, Any] = {
            "estimate": self.rate,
            "interval": None if self.interval is None else list(self.interval),
            "n": self.n,
            "n_items": self.n_clusters,
            "interval_method": self.method,
        }
        if self.note:
            out["note"] = self.note
        return out


def mid_p_interval(
    events: float, trials: float, *, confidence: float = 0.95
) -> tuple[float, float]:
    """The mid-p Clopper–Pearson interval of ``events`` out of ``trials``, which need not be whole.

    The limits solve P(X > x) + ½P(X = x) = α/2 (lower) and P(X < x) + ½P(X = x) = α/2 (upper)
    for X ~ Binomial(n, p): the exact (Clopper–Pearson 1934) tails with half the probability of
    the observed count (Lancaster, H. O. 1961, "Significance tests in discrete distributions",
    JASA 56(294): 223–234; Berry, G. & Armitage, P. 1995, "Mid-P confidence intervals: a brief
    review", The Statistician 44(4): 417–423; Agresti, A. & Gottard, A. 2007, "Nonconservative
    exact small-sample inference for discrete data", Comput. Stat. Data Anal. 51(12):
    6447–6458). Each tail is written with regularised incomplete betas, P(X ≥ x) = I_p(x,
    n − x + 1) (Johnson, Kemp & Kotz 2005, *Univariate Discrete Distributions*, 3rd ed., §3.2),
    which extend to a fractional x and n as Korn & Graubard's x* and n* are. It is shorter than
    Clopper–Pearson, whose coverage never falls below nominal and so exceeds it most where the
    count is small and discrete (Agresti & Coull 1998, Am. Stat. 52(2); Brown, Cai & DasGupta
    2001, Stat. Sci. 16(2)); no event gives [0, 1 − α^(1/n)], every event [α^(1/n), 1].

    Args:
        events: x, 0 ≤ x ≤ n.
        trials: n > 0.
        confidence: e.g. 0.95.

    Returns:
        ``(lower, upper)``, 0 ≤ lower ≤ x/n ≤ upper ≤ 1.

    Raises:
        ValueError: ``trials`` not positive or ``events`` outside [0, trials], either not
            finite, ``confidence`` outside (0, 1).
    """
    check_confidence(confidence)
    x, n = float(events), float(trials)
    if not (np.isfinite(x) and np.isfinite(n)) or n <= 0 or not 0.0 <= x <= n:
        raise ValueError(f"events must be in [0, trials] and trials positive, got {x!r}, {n!r}")
    tail = (1.0 - confidence) / 2.0
    rate = x / n

    def at_least(p: float) -> float:  # the mid-p P(X ≥ x): P(X > x) + ½P(X = x)
        upper = 1.0 if x <= 0 else float(betainc(x, n - x + 1, p))
        above = 0.0 if x >= n else float(betainc(x + 1, n - x, p))
        return 0.5 * (upper + above)

    # Each side's tail is monotone in p, from below α/2 at the bound to above it at x/n; a
    # fractional x* near 0 (or n*) can keep it above α/2 all the way, and then the bound is
    # the limit.
    lower = 0.0
    if x > 0 and at_least(rate) > tail:
        lower = brentq(lambda p: at_least(p) - tail, 0.0, rate)
    upper = 1.0
    if x < n and 1.0 - at_least(rate) > tail:
        upper = brentq(lambda p: 1.0 - at_least(p) - tail, rate, 1.0)
    return float(lower), float(upper)


def korn_graubard_interval(
    sums: npt.ArrayLike,
    sizes: npt.ArrayLike,
    *,
    aggregation: Aggregation = "observation",
    confidence: float = 0.95,
    mid_p: bool = False,
) -> tuple[float, tuple[float, float], float, float]:
    """Korn–Graubard interval of a clustered proportion from per-cluster counts.

    Korn & Graubard 1998 (Survey Methodology 24(2)): the Clopper–Pearson (1934) interval on the
    design-effect effective sample size, with the K − 1 degrees-of-freedom adjustment; the
    cluster-robust variance is :func:`bootstrap.cluster_standard_error` (module docstring).
    With ``mid_p`` the mid-p Clopper–Pearson interval (:func:`mid_p_interval`) on the same x*
    and n*, shorter where the effective count is small (the cell means' hull,
    ``stats.bounded_means``).

    Args:
        sums: length-K positive counts per cluster (may be fractional for ``cluster_mean``
            weights; ≥ 0).
        sizes: length-K observations per cluster (> 0).
        aggregation: ``"observation"`` (rate = Σ sums / Σ sizes) or ``"cluster_mean"`` (the
            mean of the clusters' rates), as in ``bootstrap.family_cluster_bootstrap``.
        confidence: e.g. 0.95.
        mid_p: the mid-p tails in place of the exact ones (default ``False``).

    Returns:
        ``(rate, (lower, upper), effective n*, design effect)``.

    Raises:
        ValueError: fewer than 2 clusters, sizes not positive, counts outside [0, size],
            ``confidence`` outside (0, 1).
    """
    s, m = cluster_counts(sums, sizes)
    check_confidence(confidence)
    k, n = s.size, float(m.sum())
    rate = float(np.mean(s / m)) if aggregation == "cluster_mean" else float(s.sum() / n)
    variance = cluster_standard_error(s, m, rate, aggregation) ** 2
    # Design effect against the unbiased simple-random-sampling variance p̂(1 − p̂)/(n − 1),
    # which the cluster-robust variance equals exactly for one observation per cluster, so
    # unclustered data get the plain Clopper–Pearson interval. Korn & Graubard truncate it at 1:
    # clustering never buys precision.
    srs = rate * (1.0 - rate) / (n - 1) if n > 1 else 0.0
    design_effect = max(variance / srs, 1.0) if srs > 0 and variance > 0 else 1.0
    n_eff = n / design_effect
    tail = (1.0 - confidence) / 2.0
    if n > 1:
        n_eff *= (t_distribution.ppf(1 - tail, n - 1) / t_distribution.ppf(1 - tail, k - 1)) ** 2
    x = rate * n_eff
    if mid_p:
        limits = mid_p_interval(x, n_eff, confidence=confidence)
        return rate, limits, float(n_eff), float(design_effect)
    lower = 0.0 if x <= 0 else float(beta_distribution.ppf(tail, x, n_eff - x + 1))
    upper = 1.0 if x >= n_eff else float(beta_distribution.ppf(1 - tail, x + 1, n_eff - x))
    return rate, (lower, upper), float(n_eff), float(design_effect)


BETA_BINOMIAL_METHOD = (
    "beta-binomial profile likelihood, F(1, K − 1) reference (Williams 1975; Prentice 1986)"
)
# The product's interval of a clustered rate (issue #36 §2): the hull of the two below.
CLUSTERED_METHOD = (
    "the hull of Korn–Graubard (Clopper–Pearson on the design-effect effective sample size) "
    "and the beta-binomial profile-likelihood interval"
)
# logit ρ, the beta-binomial intra-cluster correlation, is profiled over this grid — ρ from
# 8·10⁻⁷ (binomial to 6 digits) to 0.998, steps of 0.25 — with a parabola through the best
# point and its neighbours (one array operation per π instead of an optimiser's loop).
_LOGIT_RHO_GRID = np.linspace(-14.0, 6.0, 81)
_RHO_SCALE = 1.0 / expit(_LOGIT_RHO_GRID) - 1.0


def _profile_loglik(x: np.ndarray, n: np.ndarray, w: np.ndarray, logit_pi: float) -> float:
    """max over ρ of Σₖ log P(xₖ | nₖ, π, ρ), up to the binomial coefficients (which cancel
    in a likelihood ratio), at π = expit(``logit_pi``); (x, n) are the distinct clusters and
    ``w`` how many clusters each stands for."""
    pi = float(expit(logit_pi))
    a, b = pi * _RHO_SCALE, (1.0 - pi) * _RHO_SCALE
    terms = betaln(x[:, None] + a, (n - x)[:, None] + b) - betaln(a, b)
    loglik = w @ terms
    best = int(np.argmax(loglik))
    if 0 < best < loglik.size - 1:
        left, top, right = loglik[best - 1 : best + 2]
        curvature = 2.0 * top - left - right
        if curvature > 0:  # the parabola's vertex through the three points
            return float(top + (right - left) ** 2 / (8.0 * curvature))
    return float(loglik[best])


# The reference distributions of beta_binomial_interval's likelihood-ratio statistic.
BETA_BINOMIAL_REFERENCES = ("F", "chi2")


def beta_binomial_interval(
    sums: npt.ArrayLike,
    sizes: npt.ArrayLike,
    *,
    confidence: float = 0.95,
    reference: str = "F",
) -> tuple[float, tuple[float, float]]:
    """Profile-likelihood interval of the mean of a beta-binomial model of clustered counts.

    Cluster k's count xₖ of nₖ is Binomial(nₖ, pₖ) with pₖ ~ Beta(π(1/ρ − 1), (1 − π)(1/ρ − 1)):
    mean π, intra-cluster correlation ρ (Williams, D. A. 1975, "The analysis of binary responses
    from toxicological experiments involving reproduction and teratogenicity", Biometrics 31(4):
    949–952; Prentice, R. L. 1986, "Binary regression using an extended beta-binomial
    distribution", JASA 81(394): 321–327). π̂ is the maximum-likelihood estimate; the interval is
    every π whose profile log-likelihood (maximised over ρ) is within q/2 of the maximum, with q
    the (1 − α) quantile of the ``reference`` distribution: ``"F"``, F(1, K − 1) (= t²₍K₋₁₎,
    the small-sample reference for an estimate from K clusters, as Korn & Graubard's K − 1 df;
    Pawitan 2001, *In All Likelihood*, §2.6 on profile-likelihood intervals), or ``"chi2"``,
    χ²₁, the likelihood-ratio statistic's large-sample distribution (Wilks, S. S. 1938, Ann.
    Math. Stat. 9(1): 60–62; Pawitan 2001 §2.6). Profiled on the logit scale, so the limits stay
    in [0, 1]; no event in any cluster gives [0, u] with u > 0 (every event: [l, 1]).

    Args:
        sums: length-K counts per cluster (integers in [0, size]).
        sizes: length-K cluster sizes (positive integers).
        confidence: e.g. 0.95.
        reference: ``"F"`` (default) or ``"chi2"``.

    Returns:
        ``(π̂, (lower, upper))``.

    Raises:
        ValueError: fewer than 2 clusters, non-integer counts or sizes, counts outside
            [0, size], ``confidence`` outside (0, 1), an unknown ``reference``.
    """
    x, n = cluster_counts(sums, sizes)
    if np.any(x != np.round(x)) or np.any(n != np.round(n)):
        raise ValueError("counts and sizes must be whole numbers")
    check_confidence(confidence)
    if reference not in BETA_BINOMIAL_REFERENCES:
        raise ValueError(f"reference must be one of {BETA_BINOMIAL_REFERENCES}, got {reference!r}")
    if reference == "F":
        cutoff = float(t_distribution.ppf(0.5 + confidence / 2.0, x.size - 1) ** 2) / 2.0
    else:
        cutoff = float(chi2_distribution.ppf(confidence, 1)) / 2.0
    events, total = float(x.sum()), float(n.sum())
    pairs, w = np.unique(np.column_stack([x, n]), axis=0, return_counts=True)
    x, n, w = pairs[:, 0], pairs[:, 1], w.astype(float)
    edge = 30.0  # logit π of ±30: π within 10⁻¹³ of a bound
    if events in (0.0, total):
        # The likelihood's supremum (0) is at π → 0 (or 1); one limit is the bound.
        top, estimate = 0.0, events / total
        start = -edge if events == 0 else edge
    else:
        fit = minimize_scalar(
            lambda lp: -_profile_loglik(x, n, w, lp),
            bracket=(float(logit(events / total)) - 0.5, float(logit(events / total))),
            options={"xtol": 1e-5},
        )
        top, start = -float(fit.fun), float(fit.x)
        estimate = float(expit(start))

    def gap(lp: float) -> float:
        return _profile_loglik(x, n, w, lp) - (top - cutoff)

    lower = 0.0 if events == 0 else float(expit(brentq(gap, -edge, start, xtol=1e-6)))
    upper = 1.0 if events == total else float(expit(brentq(gap, start, edge, xtol=1e-6)))
    return estimate, (lower, upper)


def clustered_rate_interval(
    sums: npt.ArrayLike,
    sizes: npt.ArrayLike,
    *,
    aggregation: Aggregation = "observation",
    confidence: float = 0.95,
) -> tuple[float, tuple[float, float], float, float, str]:
    """The product's interval of a clustered rate: the hull of Korn–Graubard and beta-binomial.

    :func:`korn_graubard_interval` covers where clusters are small or nearly independent and
    the rate is rare, and under-covers with ICC 0.3 and unequal cluster sizes (1–60), with the
    truth above the interval; :func:`beta_binomial_interval` covers there (tests/calibration,
    docs/analysis.md: issue #36 §2). The reported interval spans both, so it is never narrower
    than the Korn–Graubard interval it replaces. With every cluster of size 1 the beta-binomial
    is the binomial, whose exact interval Korn–Graubard already is: it alone is reported.

    Returns:
        ``(rate, (lower, upper), effective n*, design effect, method)``: the rate, n* and the
        design effect as :func:`korn_graubard_interval` gives them; ``method`` names what the
        interval is.

    Raises:
        ValueError: as :func:`korn_graubard_interval`.
    """
    rate, (lower, upper), n_eff, deff = korn_graubard_interval(
        sums, sizes, aggregation=aggregation, confidence=confidence
    )
    m = np.asarray(sizes, dtype=float)
    s = np.asarray(sums, dtype=float)
    if np.all(m == 1) or np.any(s != np.round(s)):
        return rate, (lower, upper), n_eff, deff, METHOD
    _, (bb_lower, bb_upper) = beta_binomial_interval(s, m, confidence=confidence)
    return rate, (min(lower, bb_lower), max(upper, bb_upper)), n_eff, deff, CLUSTERED_METHOD


def rate_interval(
    values: npt.ArrayLike,
    clusters: npt.ArrayLike,
    *,
    aggregation: Aggregation = "observation",
    confidence: float = 0.95,
    min_clusters: int = RATE_MIN_CLUSTERS_FLOOR,
) -> RateInterval:
    """A binary outcome's rate with its clustered interval.

    The interval of :func:`clustered_rate_interval` over the per-cluster counts of ``values``:
    Korn–Graubard (Korn & Graubard 1998; Clopper & Pearson 1934), widened where needed to the
    beta-binomial profile-likelihood interval (Williams 1975; Prentice 1986).

    Args:
        values: 1-D array of 0/1 outcomes (e.g. refusal R per response).
        clusters: 1-D cluster labels (item), same length.
        aggregation, confidence: as :func:`korn_graubard_interval`.
        min_clusters: the plan's minimum (raised to ``RATE_MIN_CLUSTERS_FLOOR``); below it the
            rate is reported and the interval is unavailable, with the reason.

    Raises:
        ValueError: values not all 0 or 1, mismatched lengths, missing cluster labels.
    """
    x = np.asarray(values, dtype=float)
    labels = pd.Series(np.asarray(clusters, dtype=object))
    if x.ndim != 1 or labels.size != x.size or x.size == 0:
        raise ValueError("values and clusters must be non-empty 1-D arrays of equal length")
    if not np.all((x == 0) | (x == 1)):
        raise ValueError("values must all be 0 or 1")
    codes, k = cluster_codes(labels)
    sums = np.bincount(codes, weights=x, minlength=k)
    sizes = np.bincount(codes, minlength=k).astype(float)
    required = max(min_clusters, RATE_MIN_CLUSTERS_FLOOR)
    result = partial(RateInterval, n=int(x.size), n_clusters=k, confidence=confidence)
    if k < required:
        rate = float(np.mean(sums / sizes)) if aggregation == "cluster_mean" else x.mean()
        return result(
            rate=float(rate),
            interval=None,
            effective_n=None,
            design_effect=None,
            note=unavailable_note(k, required),
        )
    rate, bounds, n_eff, deff, method = clustered_rate_interval(
        sums, sizes, aggregation=aggregation, confidence=confidence
    )
    return result(rate=rate, interval=bounds, effective_n=n_eff, design_effect=deff, method=method)


@dataclass(frozen=True)
class LabelRate:
    group: Hashable
    label: Hashable
    count: int
    n: int
    rate: float
    interval: tuple[float, float] | None
    n_clusters: int
    effective_n: float | None = None
    note: str = ""


@dataclass(frozen=True)
class LabelRates:
    """Per-group label rates; ``interval`` is None where fewer than ``min_clusters`` items."""

    rates: tuple[LabelRate, ...]
    labels: tuple[Hashable, ...]
    confidence: float
    replicates: int
    seed: int
    min_clusters: int
    method: str = METHOD

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for row in out["rates"]:
            row["interval"] = list(row["interval"]) if row["interval"] is not None else None
        out["labels"] = list(self.labels)
        return out

    def rate(self, group: Hashable, label: Hashable) -> LabelRate:
        for row in self.rates:
            if row.group == group and row.label == label:
                return row
        raise ValueError(f"no rate for group {group!r} and label {label!r}")


def label_rates(
    data: pd.DataFrame,
    *,
    label: str,
    cluster: str,
    labels: Sequence[Hashable],
    seed: int,
    group: str | None = None,
    replicates: int = DEFAULT_REPLICATES,
    confidence: float = 0.95,
    min_clusters: int = RATE_MIN_CLUSTERS_FLOOR,
) -> LabelRates:
    """Rate of each label per group, with an item-clustered interval (Korn–Graubard; the hull
    with the beta-binomial interval where items hold several responses:
    :func:`clustered_rate_interval`).

    The rate is count / n over all rows of the group (the full-sample rate of CRUCIBLE §6.2,
    i.e. ``aggregation="observation"`` in bootstrap.py); each label's interval is the
    Korn–Graubard interval of its indicator with items as clusters (see the module docstring),
    never zero-width. ``seed`` and ``replicates`` are recorded for the plan but not used: the
    interval is closed-form (they drew the percentile bootstrap this replaced).

    Args:
        data: one row per scored response.
        label: column holding the categorical label (e.g. ``"final_label"``).
        cluster: column holding the resampling cluster (e.g. the item / prompt id).
        labels: the complete label set of the rubric; a label never observed gets rate 0.
        seed: seed for ``numpy.random.default_rng``.
        group: column to split by (e.g. the evaluand); ``None`` reports one group ``"all"``.
        replicates, confidence, min_clusters: as in ``family_cluster_bootstrap`` (the
            minimum is raised to ``RATE_MIN_CLUSTERS_FLOOR``).

    Raises:
        ValueError: missing columns, an empty frame, a missing label or cluster value, a label
            outside ``labels``, duplicate entries in ``labels``.
    """
    columns = [label, cluster] + ([group] if group is not None else [])
    missing = [c for c in columns if c not in data.columns]
    if missing:
        raise ValueError(f"data has no column(s) {missing}")
    if data.empty:
        raise ValueError("data has no rows")
    if len(set(labels)) != len(labels):
        raise ValueError(f"labels contains duplicates: {list(labels)!r}")
    for column in columns:
        if data[column].isna().any():
            raise ValueError(f"column {column!r} has missing values; exclude those rows first")
    unknown = sorted(set(data[label]) - set(labels), key=str)
    if unknown:
        raise ValueError(f"labels not in the label set {list(labels)!r}: {unknown!r}")

    required = max(min_clusters, RATE_MIN_CLUSTERS_FLOOR)
    method = METHOD  # the hull's name once any group's clusters hold more than one response
    groups = [(ALL_ROWS, data)] if group is None else list(data.groupby(group, sort=True))
    rows: list[LabelRate] = []
    for group_key, frame in groups:
        codes, items = pd.factorize(frame[cluster], sort=True)
        indicators = np.column_stack([(frame[label] == lab).to_numpy(float) for lab in labels])
        sums = np.zeros((len(items), len(labels)))
        np.add.at(sums, codes, indicators)
        sizes = np.bincount(codes, minlength=len(items)).astype(float)
        counts = sums.sum(axis=0)
        n = len(frame)
        intervals: list[tuple[float, float] | None] = [None] * len(labels)
        effective: list[float | None] = [None] * len(labels)
        note = ""
        if len(items) >= required:
            for j in range(len(labels)):
                _, intervals[j], effective[j], _, used = clustered_rate_interval(
                    sums[:, j], sizes, aggregation="observation", confidence=confidence
                )
                method = used if used != METHOD else method
        else:
            note = unavailable_note(len(items), required)
        for j, lab in enumerate(labels):
            rows.append(
                LabelRate(
                    group=group_key,
                    label=lab,
                    count=int(counts[j]),
                    n=n,
                    rate=float(counts[j] / n),
                    interval=intervals[j],
                    n_clusters=len(items),
                    effective_n=effective[j],
                    note=note,
                )
            )
    return LabelRates(
        rates=tuple(rows),
        labels=tuple(labels),
        confidence=confidence,
        replicates=replicates,
        seed=seed,
        min_clusters=required,
        method=method,
    )
