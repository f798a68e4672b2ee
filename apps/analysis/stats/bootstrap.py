"""Family-clustered bootstrap (CRUCIBLE §9.1) and coverage n/N (§6.1, §9.3).

The resampling unit is the cluster (scenario family in CRUCIBLE, item in OPB-01): clusters are
drawn with replacement and every observation of a drawn cluster comes along. A family with
many cheap variants therefore carries the weight of one family, not of its variants
(Davison & Hinkley 1997, *Bootstrap Methods and their Application*, §3.8 "hierarchical data":
resample the top-level units).

Interval method, chosen by simulation (tests/calibration/, docs/analysis.md): the
**studentised cluster bootstrap (bootstrap-t)** — Davison & Hinkley 1997 §5.2.1 (studentized
bootstrap confidence limits), Hall 1988 (Ann. Statist. 16(3), "Theoretical comparison of
bootstrap confidence intervals"); for clustered data Cameron, Gelbach & Miller 2008
(Rev. Econ. Stat. 90(3), "Bootstrap-based improvements for inference with clustered errors").
Each replicate's mean is studentised by its own cluster-robust standard error, and the interval
is ``[θ̂ − t*₁₋ₐ·SE, θ̂ − t*ₐ·SE]``. The percentile interval CRUCIBLE §9.1 names under-covers with
few clusters (about 90 % for 10 clusters at 95 %); BCa and Hesterberg's expanded percentile did
no better than 92–93 %; the bootstrap-t reaches 93.5–96.5 % from 10 clusters on, which is the
floor (``MIN_CLUSTERS_FLOOR``) below which no interval is reported. ``method="percentile"`` keeps
the plain percentile interval for a plan that froze it.

Vectorised: one ``replicates × clusters`` matrix of draw counts replaces the loop over
replicates; each replicate's statistic is then a weighted sum of per-cluster summaries.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import asdict, dataclass
from functools import partial
from itertools import pairwise
from typing import Any, Generic, Literal, TypeVar

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy.stats import norm
from scipy.stats import t as t_dist

from apps.analysis.stats.checks import check_confidence

Aggregation = Literal["cluster_mean", "observation"]
AGGREGATIONS = ("cluster_mean", "observation")
IntervalMethod = Literal["studentized", "percentile"]
INTERVAL_METHODS = ("studentized", "percentile")
DEFAULT_REPLICATES = 10_000
# The fewest clusters the calibration suite shows the studentised interval covers at its nominal
# level with (docs/analysis.md); a plan's min_clusters may raise it, never lower it.
MIN_CLUSTERS_FLOOR = 10
DEFAULT_MIN_CLUSTERS = MIN_CLUSTERS_FLOOR
NOT_OBSERVED = "not observed"
NO_SPREAD_NOTE = (
    "interval unavailable: every cluster has the same value, so the clusters show no spread "
    "to form an interval from (a zero-width interval would claim certainty; docs/analysis.md)"
)
# What the calibration suite measured for the nominal 95 % cluster percentile interval, by number
# of clusters (design "binary K ICC=0.2 p=0.3 cluster_mean", 2,000 runs each, MC SE 0.5–1.0;
# tests/calibration/test_calibration.py checks these figures against every run of the suite,
# docs/analysis.md has the table). It first reached 93.5 % at 80 clusters.
PERCENTILE_COVERAGE_MEASURED: Mapping[int, float] = {
    3: 0.740,
    6: 0.858,
    10: 0.912,
    20: 0.925,
    40: 0.932,
    80: 0.936,
}
PERCENTILE_CALIBRATED_CLUSTERS = 80
METHOD_NAMES = {
    "studentized": "cluster bootstrap-t (studentised by the cluster-robust standard error)",
    "percentile": "cluster percentile bootstrap",
}


@dataclass(frozen=True)
class BootstrapResult:
    """Point estimate with its family-clustered bootstrap interval.

    ``interval`` is ``None`` and ``interval_available`` is False when fewer than
    ``min_clusters`` clusters contributed (CRUCIBLE §9.1, last sentence); ``note`` says why.
    ``std_error`` is the cluster-robust standard error the bootstrap-t studentises with.
    """

    estimate: float
    interval: tuple[float, float] | None
    interval_available: bool
    confidence: float
    n_clusters: int
    n_observations: int
    replicates: int
    seed: int
    aggregation: str
    min_clusters: int
    method: str = "studentized"
    std_error: float | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["interval"] = list(self.interval) if self.interval is not None else None
        return out


def cluster_weights(n_clusters: int, replicates: int, rng: np.random.Generator) -> np.ndarray:
    """Draw counts for a cluster bootstrap: a ``replicates × n_clusters`` int64 matrix.

    Clusters drawn with replacement, as Davison & Hinkley 1997 §3.8 resample the top level.

    Row b says how many times each cluster was drawn in replicate b; every row sums to
    ``n_clusters`` (clusters drawn with replacement, as many draws as clusters). The draws are
    ``rng.integers(0, n_clusters, size=(replicates, n_clusters))``, so a given generator state
    always yields the same matrix.

    Raises:
        ValueError: ``n_clusters`` < 1 or ``replicates`` < 1.
    """
    if n_clusters < 1:
        raise ValueError(f"n_clusters must be >= 1, got {n_clusters}")
    if replicates < 1:
        raise ValueError(f"replicates must be >= 1, got {replicates}")
    draws = rng.integers(0, n_clusters, size=(replicates, n_clusters))
    # Offsetting each row by row * n_clusters (in place, to save a copy) lets one bincount
    # count all rows at once.
    draws += (np.arange(replicates) * n_clusters)[:, None]
    counts = np.bincount(draws.ravel(), minlength=replicates * n_clusters)
    return counts.reshape(replicates, n_clusters)


def percentile_interval(replicate_values: np.ndarray, confidence: float) -> tuple[float, float]:
    """Percentile interval of bootstrap replicates (numpy's default linear interpolation).

    The (α/2, 1 − α/2) quantiles of the replicates (Efron & Tibshirani 1993, *An Introduction
    to the Bootstrap*, §13.3). Under-covers with few clusters (docs/analysis.md, *Intervals and
    their calibration*); kept for plans that froze it.

    Raises:
        ValueError: ``confidence`` not in (0, 1) or no finite replicate values.
    """
    check_confidence(confidence)
    finite = replicate_values[np.isfinite(replicate_values)]
    if finite.size == 0:
        raise ValueError("no finite bootstrap replicates to form an interval")
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(finite, [tail, 1.0 - tail])
    return float(lo), float(hi)


def cluster_standard_error(
    sums: np.ndarray, sizes: np.ndarray, estimate: float, aggregation: Aggregation
) -> float:
    """Cluster-robust standard error of a mean from per-cluster sums and sizes.

    ``cluster_mean``: sd(cluster means)/√K (ddof 1). ``observation`` (a ratio estimator): the
    linearisation √(K/(K − 1) · Σₖ (sₖ − θ̂·nₖ)²) / Σₖ nₖ (Cochran 1977, *Sampling Techniques*,
    §6.13 ratio estimator; the CR1 factor K/(K − 1) of Cameron & Miller 2015, J. Hum. Resour.
    50(2) §II.C). K ≥ 2.
    """
    k = sums.size
    if aggregation == "cluster_mean":
        return float(np.std(sums / sizes, ddof=1) / np.sqrt(k))
    resid = sums - estimate * sizes
    return float(np.sqrt(k / (k - 1) * np.sum(resid**2)) / sizes.sum())


def studentized_interval(
    weights: np.ndarray,
    sums: np.ndarray,
    sizes: np.ndarray,
    estimate: float,
    aggregation: Aggregation,
    confidence: float,
) -> tuple[tuple[float, float], float, int]:
    """Cluster bootstrap-t interval of a mean (Davison & Hinkley 1997 §5.2.1, eq. 5.7).

    Each replicate b gives θ*_b and its own cluster-robust SE*_b (as
    :func:`cluster_standard_error`, computed from the draw counts without materialising the
    resample); t*_b = (θ*_b − θ̂)/SE*_b and the interval is [θ̂ − t*₍₁₋ₐ₎·SE, θ̂ − t*₍ₐ₎·SE].
    Replicates with SE*_b = 0 (every drawn cluster alike) have no t* and are left out.

    Returns:
        ``((lower, upper), SE, number of replicates left out)``.

    Raises:
        ValueError: no replicate with a positive standard error while SE > 0, or a
            ``confidence`` outside (0, 1).
    """
    check_confidence(confidence)
    k = sums.size
    se = cluster_standard_error(sums, sizes, estimate, aggregation)
    w = weights.astype(float)
    if aggregation == "cluster_mean":
        means = sums / sizes
        reps = (w @ means) / k
        second = (w @ means**2) / k
        var = np.maximum(second - reps**2, 0.0) * k / (k - 1) / k
    else:
        total = w @ sizes
        reps = (w @ sums) / total
        squares = w @ sums**2 - 2 * reps * (w @ (sums * sizes)) + reps**2 * (w @ sizes**2)
        var = np.maximum(squares, 0.0) * k / (k - 1) / total**2
    if se == 0.0:
        return (estimate, estimate), 0.0, 0
    usable = var > 1e-300
    if not usable.any():
        raise ValueError("no bootstrap replicate has a positive standard error")
    t_star = (reps[usable] - estimate) / np.sqrt(var[usable])
    tail = (1.0 - confidence) / 2.0
    q_lo, q_hi = np.quantile(t_star, [tail, 1.0 - tail])
    return (float(estimate - q_hi * se), float(estimate - q_lo * se)), se, int((~usable).sum())


def expanded_percentile_interval(
    replicate_values: np.ndarray, confidence: float, n_clusters: int
) -> tuple[float, float]:
    """Hesterberg's expanded percentile interval of bootstrap replicates, for K clusters.

    The percentile interval at the widened level α′/2 = Φ(−√(K/(K − 1)) · t₍K₋₁, 1−α/2₎),
    which undoes the bootstrap's narrowness bias (the plug-in variance divides by K, not
    K − 1) and uses t rather than normal tails (Hesterberg, T. C. 2015, "What Teachers Should
    Know About the Bootstrap", Am. Stat. 69(4) §4.2 "expanded percentile interval"). Used for
    model coefficients, whose replicates have no standard error of their own to studentise by.

    Raises:
        ValueError: ``n_clusters`` < 2, ``confidence`` not in (0, 1) or no finite replicates.
    """
    check_confidence(confidence)
    if n_clusters < 2:
        raise ValueError(f"n_clusters must be >= 2, got {n_clusters}")
    tail = (1.0 - confidence) / 2.0
    widened = float(
        norm.cdf(-np.sqrt(n_clusters / (n_clusters - 1)) * t_dist.ppf(1 - tail, n_clusters - 1))
    )
    return percentile_interval(replicate_values, 1.0 - 2.0 * widened)


def family_cluster_bootstrap(
    values: npt.ArrayLike,
    clusters: npt.ArrayLike,
    *,
    seed: int,
    aggregation: Aggregation = "cluster_mean",
    replicates: int = DEFAULT_REPLICATES,
    confidence: float = 0.95,
    min_clusters: int = DEFAULT_MIN_CLUSTERS,
    method: IntervalMethod = "studentized",
    support: tuple[float, float] | None = None,
) -> BootstrapResult:
    """Family-clustered bootstrap of a mean (CRUCIBLE §9.1), bootstrap-t by default.

    Args:
        values: 1-D array of n eligible observations (e.g. seed-level scores, F_att per
            response), finite floats in their own units.
        clusters: 1-D array of n cluster labels (family or item); any hashable labels.
        seed: seed for ``numpy.random.default_rng``; recorded in the result.
        aggregation: the frozen aggregation rule.
            ``"cluster_mean"`` — summarise within each cluster first (its mean), then take the
            mean over clusters: each cluster weighs the same however many observations it has
            (CRUCIBLE §9.1 "summarized within family").
            ``"observation"`` — the mean over all observations of the drawn clusters (a ratio
            estimator): clusters weigh by their size, but resampling is still by cluster.
        replicates: number of bootstrap replicates B (frozen in the plan).
        confidence: interval coverage, e.g. 0.95 for the 2.5th and 97.5th percentiles.
        min_clusters: the frozen minimum number of contributing clusters. Below it the point
            estimate is reported and the interval is marked unavailable (as it is when every
            cluster has the same value: ``NO_SPREAD_NOTE``); there is no fallback
            to an observation-level (independence) interval. For ``"studentized"`` a value
            below ``MIN_CLUSTERS_FLOOR`` is raised to the floor (the method is not calibrated
            below it), and the note says so.
        method: ``"studentized"`` (cluster bootstrap-t, see the module docstring) or
            ``"percentile"`` (Efron & Tibshirani 1993, *An Introduction to the Bootstrap*,
            §13.3).
        support: the values' range, e.g. ``(0, 1)`` for F_att; a bootstrap-t bound beyond it
            is clipped to it (the truth cannot lie outside, so coverage is unchanged).

    Returns:
        :class:`BootstrapResult`.

    Raises:
        ValueError: mismatched or empty inputs, non-finite values, missing cluster labels,
            unknown ``aggregation`` or ``method``, ``replicates`` < 1, ``min_clusters`` < 1,
            ``confidence`` outside (0, 1).
    """
    x = np.asarray(values, dtype=float)
    codes, n_clusters = _cluster_codes(clusters, x.shape)
    _check_finite(x, "values")
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    if replicates < 1:
        raise ValueError(f"replicates must be >= 1, got {replicates}")
    if min_clusters < 1:
        raise ValueError(f"min_clusters must be >= 1, got {min_clusters}")
    if method not in INTERVAL_METHODS:
        raise ValueError(f"method must be one of {INTERVAL_METHODS}, got {method!r}")
    check_confidence(confidence)
    required = max(min_clusters, MIN_CLUSTERS_FLOOR) if method == "studentized" else min_clusters

    sums = np.bincount(codes, weights=x, minlength=n_clusters)
    sizes = np.bincount(codes, minlength=n_clusters).astype(float)
    if aggregation == "cluster_mean":
        estimate = float(np.mean(sums / sizes))
    else:
        estimate = float(sums.sum() / sizes.sum())

    result = partial(
        BootstrapResult,
        estimate=estimate,
        confidence=confidence,
        n_clusters=n_clusters,
        n_observations=int(x.size),
        replicates=replicates,
        seed=seed,
        aggregation=aggregation,
        min_clusters=required,
        method=method,
    )
    if n_clusters < required:
        return result(
            interval=None,
            interval_available=False,
            note=unavailable_note(n_clusters, required),
        )

    if cluster_standard_error(sums, sizes, estimate, aggregation) == 0.0:
        # Every cluster alike (a cell of exact zeros, say): any bootstrap interval is the point
        # itself, which claims a certainty the data do not give (issue #36).
        return result(interval=None, interval_available=False, note=NO_SPREAD_NOTE)
    weights = cluster_weights(n_clusters, replicates, np.random.default_rng(seed))
    if method == "percentile":
        replicate_values = replicate_means(weights, sums, sizes, aggregation)
        return result(
            interval=percentile_interval(replicate_values, confidence),
            interval_available=True,
        )
    (lo, hi), se, left_out = studentized_interval(
        weights, sums, sizes, estimate, aggregation, confidence
    )
    if support is not None:
        lo, hi = max(lo, support[0]), min(hi, support[1])
    return result(
        interval=(lo, hi),
        interval_available=True,
        std_error=se,
        note=f"{left_out} replicates had no spread and were left out" if left_out else "",
    )


def unavailable_note(n_clusters: int, required: int) -> str:
    """Why an interval is unavailable: too few clusters for the frozen (or floor) minimum."""
    return (
        f"interval unavailable: {n_clusters} clusters contributed, fewer than the minimum of "
        f"{required} (the plan's min_clusters or the method's calibrated floor, below which "
        "its intervals do not reach their nominal coverage; docs/analysis.md)"
    )


def percentile_coverage_figure(n_clusters: int) -> str:
    """The calibration suite's coverage of the nominal 95 % percentile interval at
    ``n_clusters``, in words: the figure measured there ("85.8 % at 6 clusters"), the two it lies
    between (coverage rises with the number of clusters), or the first figure it is below; from
    ``PERCENTILE_COVERAGE_MEASURED``. "" from ``PERCENTILE_CALIBRATED_CLUSTERS`` clusters on.
    """
    if n_clusters >= PERCENTILE_CALIBRATED_CLUSTERS:
        return ""
    measured = sorted(PERCENTILE_COVERAGE_MEASURED.items())
    exact = dict(measured).get(n_clusters)
    if exact is not None:
        return f"{100 * exact:.1f} % at {n_clusters} clusters"
    if n_clusters < measured[0][0]:
        k, c = measured[0]
        return f"less than the {100 * c:.1f} % it covered at {k} clusters"
    (k0, c0), (k1, c1) = next((a, b) for a, b in pairwise(measured) if a[0] < n_clusters < b[0])
    return (
        f"between {100 * c0:.1f} % ({k0} clusters) and {100 * c1:.1f} % ({k1} clusters) "
        f"for {n_clusters}"
    )


def percentile_coverage_measured(n_clusters: int) -> str:
    """What the calibration suite measured for the percentile interval at ``n_clusters``, as a
    sentence (:func:`percentile_coverage_figure`, and from where it reaches 93.5 %); each figure
    is the coverage of a nominal 95 % interval. Returns "" from
    ``PERCENTILE_CALIBRATED_CLUSTERS`` clusters on.
    """
    figure = percentile_coverage_figure(n_clusters)
    if not figure:
        return ""
    return (
        f"the calibration suite measured this percentile interval's coverage (nominal 95 %) as "
        f"{figure}; it reaches 93.5 % only from {PERCENTILE_CALIBRATED_CLUSTERS} "
        "(docs/analysis.md)"
    )


def replicate_means(
    weights: np.ndarray, sums: np.ndarray, sizes: np.ndarray, aggregation: Aggregation
) -> np.ndarray:
    """Per-replicate means from draw counts and per-cluster sums and sizes.

    Args:
        weights: ``replicates × K`` draw counts from :func:`cluster_weights`.
        sums: length-K (or ``K × m`` for m statistics at once) per-cluster sums.
        sizes: length-K per-cluster observation counts, all > 0.
        aggregation: as in :func:`family_cluster_bootstrap`.

    Returns:
        Length-``replicates`` array (or ``replicates × m``).
    """
    w = weights.astype(float)
    if aggregation == "cluster_mean":
        means = sums / (sizes if sums.ndim == 1 else sizes[:, None])
        cluster_means: np.ndarray = (w @ means) / weights.shape[1]
        return cluster_means
    denominator = w @ sizes
    ratios: np.ndarray = (w @ sums) / (denominator if sums.ndim == 1 else denominator[:, None])
    return ratios


# A coverage cell's key, e.g. an (evaluand, rung, axis, family) tuple.
_Cell = TypeVar("_Cell", bound=Hashable)


@dataclass(frozen=True)
class CoverageCell(Generic[_Cell]):
    cell: _Cell
    n: int
    N: int
    status: str

    @property
    def fraction(self) -> float:
        return self.n / self.N


@dataclass(frozen=True)
class CoverageReport(Generic[_Cell]):
    """Observed n over planned N per cell; unobserved cells listed, never imputed."""

    cells: tuple[CoverageCell[_Cell], ...]
    n_total: int
    N_total: int
    not_observed: tuple[_Cell, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "cells": [
                {
                    "cell": _json_cell(c.cell),
                    "n": c.n,
                    "N": c.N,
                    "fraction": c.fraction,
                    "status": c.status,
                }
                for c in self.cells
            ],
            "n_total": self.n_total,
            "N_total": self.N_total,
            "not_observed": [_json_cell(c) for c in self.not_observed],
        }


def coverage(
    observed: Mapping[_Cell, int | bool] | pd.Series, planned: Mapping[_Cell, int] | pd.Series
) -> CoverageReport[_Cell]:
    """Coverage n/N per cell (CRUCIBLE §6.1 "observed n/N", §9.3 no imputation).

    Args:
        observed: cell → observed count n (an int ≥ 0) or an observed mask (True = 1,
            False = 0). Cells of the plan missing from ``observed`` count as n = 0.
        planned: cell → planned count N (int ≥ 1). Cells are any hashable keys, e.g.
            ``(evaluand, rung, axis, family)`` tuples.

    Returns:
        :class:`CoverageReport` with the cells in ``planned``'s order; a cell with n = 0 has
        status ``"not observed"`` (metadata, not a score) and is listed in ``not_observed``.

    Raises:
        ValueError: an observed cell that is not in the plan, a negative or non-integer count,
            a planned N < 1, or n > N.
    """
    observed = dict(observed.items())
    planned = dict(planned.items())
    extra = [cell for cell in observed if cell not in planned]
    if extra:
        raise ValueError(f"observed cells not in the plan: {extra[:5]!r}")
    cells: list[CoverageCell[_Cell]] = []
    for cell, big_n in planned.items():
        big_n = _count(big_n, f"planned N for cell {cell!r}")
        if big_n < 1:
            raise ValueError(f"planned N for cell {cell!r} must be >= 1, got {big_n}")
        n = _count(observed.get(cell, 0), f"observed n for cell {cell!r}")
        if n > big_n:
            raise ValueError(f"observed n={n} exceeds planned N={big_n} for cell {cell!r}")
        cells.append(CoverageCell(cell, n, big_n, "observed" if n else NOT_OBSERVED))
    return CoverageReport(
        cells=tuple(cells),
        n_total=sum(c.n for c in cells),
        N_total=sum(c.N for c in cells),
        not_observed=tuple(c.cell for c in cells if c.n == 0),
    )


def _cluster_codes(clusters: npt.ArrayLike, shape: tuple[int, ...]) -> tuple[np.ndarray, int]:
    labels = pd.Series(np.asarray(clusters, dtype=object).reshape(-1))
    if len(shape) != 1:
        raise ValueError(f"values must be 1-D, got shape {shape}")
    if labels.size != shape[0]:
        raise ValueError(f"values has {shape[0]} observations but clusters has {labels.size}")
    if labels.size == 0:
        raise ValueError("no observations")
    if labels.isna().any():
        raise ValueError(f"cluster label missing at index {int(labels.isna().to_numpy().argmax())}")
    # Sorted codes make the result independent of row order (a database may return the same
    # rows in any order, and a rerun must be byte-identical).
    try:
        codes, uniques = pd.factorize(labels, sort=True)
    except TypeError as exc:
        raise ValueError("cluster labels must be mutually comparable (one type)") from exc
    return codes, len(uniques)


def _check_finite(x: np.ndarray, name: str) -> None:
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be finite; first bad index {int(np.argmin(np.isfinite(x)))}")


def _count(value: object, what: str) -> int:
    if isinstance(value, bool | np.bool_):
        return int(value)
    if isinstance(value, int | np.integer) and value >= 0:
        return int(value)
    raise ValueError(f"{what} must be a non-negative integer, got {value!r}")


def _json_cell(cell: Hashable) -> object:
    return list(cell) if isinstance(cell, tuple) else cell
