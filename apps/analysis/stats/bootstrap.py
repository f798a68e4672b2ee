"""Family-clustered percentile bootstrap (CRUCIBLE §9.1) and coverage n/N (§6.1, §9.3).

The resampling unit is the cluster (scenario family in CRUCIBLE, item in OPB-01): clusters are
drawn with replacement and every observation of a drawn cluster comes along. A family with
many cheap variants therefore carries the weight of one family, not of its variants.

Vectorised: one ``replicates × clusters`` matrix of draw counts replaces the loop over
replicates; each replicate's statistic is then a weighted sum of per-cluster summaries.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

Aggregation = Literal["cluster_mean", "observation"]
AGGREGATIONS = ("cluster_mean", "observation")
DEFAULT_REPLICATES = 10_000
DEFAULT_MIN_CLUSTERS = 5
NOT_OBSERVED = "not observed"


@dataclass(frozen=True)
class BootstrapResult:
    """Point estimate with its family-clustered percentile interval.

    ``interval`` is ``None`` and ``interval_available`` is False when fewer than
    ``min_clusters`` clusters contributed (CRUCIBLE §9.1, last sentence); ``note`` says why.
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
    note: str = ""

    def to_dict(self) -> dict:
        out = asdict(self)
        out["interval"] = list(self.interval) if self.interval is not None else None
        return out


def cluster_weights(n_clusters: int, replicates: int, rng: np.random.Generator) -> np.ndarray:
    """Draw counts for a cluster bootstrap: a ``replicates × n_clusters`` int64 matrix.

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

    Raises:
        ValueError: ``confidence`` not in (0, 1) or no finite replicate values.
    """
    _check_confidence(confidence)
    finite = replicate_values[np.isfinite(replicate_values)]
    if finite.size == 0:
        raise ValueError("no finite bootstrap replicates to form an interval")
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(finite, [tail, 1.0 - tail])
    return float(lo), float(hi)


def family_cluster_bootstrap(
    values: npt.ArrayLike,
    clusters: npt.ArrayLike,
    *,
    seed: int,
    aggregation: Aggregation = "cluster_mean",
    replicates: int = DEFAULT_REPLICATES,
    confidence: float = 0.95,
    min_clusters: int = DEFAULT_MIN_CLUSTERS,
) -> BootstrapResult:
    """Family-clustered percentile bootstrap of a mean (CRUCIBLE §9.1).

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
            estimate is reported and the interval is marked unavailable; there is no fallback
            to an observation-level (independence) interval.

    Returns:
        :class:`BootstrapResult`.

    Raises:
        ValueError: mismatched or empty inputs, non-finite values, missing cluster labels,
            unknown ``aggregation``, ``replicates`` < 1, ``min_clusters`` < 1, ``confidence``
            outside (0, 1).
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
    _check_confidence(confidence)

    sums = np.bincount(codes, weights=x, minlength=n_clusters)
    sizes = np.bincount(codes, minlength=n_clusters).astype(float)
    if aggregation == "cluster_mean":
        estimate = float(np.mean(sums / sizes))
    else:
        estimate = float(sums.sum() / sizes.sum())

    common = dict(
        estimate=estimate,
        confidence=confidence,
        n_clusters=n_clusters,
        n_observations=int(x.size),
        replicates=replicates,
        seed=seed,
        aggregation=aggregation,
        min_clusters=min_clusters,
    )
    if n_clusters < min_clusters:
        return BootstrapResult(
            interval=None,
            interval_available=False,
            note=f"interval unavailable: {n_clusters} clusters contributed, "
            f"fewer than the minimum of {min_clusters}",
            **common,
        )

    weights = cluster_weights(n_clusters, replicates, np.random.default_rng(seed))
    replicate_values = replicate_means(weights, sums, sizes, aggregation)
    return BootstrapResult(
        interval=percentile_interval(replicate_values, confidence),
        interval_available=True,
        **common,
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
        return (w @ means) / weights.shape[1]
    denominator = w @ sizes
    return (w @ sums) / (denominator if sums.ndim == 1 else denominator[:, None])


@dataclass(frozen=True)
class CoverageCell:
    cell: Hashable
    n: int
    N: int
    status: str

    @property
    def fraction(self) -> float:
        return self.n / self.N


@dataclass(frozen=True)
class CoverageReport:
    """Observed n over planned N per cell; unobserved cells listed, never imputed."""

    cells: tuple[CoverageCell, ...]
    n_total: int
    N_total: int
    not_observed: tuple[Hashable, ...]

    def to_dict(self) -> dict:
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
    observed: Mapping[Hashable, int | bool] | pd.Series, planned: Mapping[Hashable, int] | pd.Series
) -> CoverageReport:
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
    cells = []
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


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")


def _count(value: object, what: str) -> int:
    if isinstance(value, bool | np.bool_):
        return int(value)
    if isinstance(value, int | np.integer) and value >= 0:
        return int(value)
    raise ValueError(f"{what} must be a non-negative integer, got {value!r}")


def _json_cell(cell: Hashable) -> object:
    return list(cell) if isinstance(cell, tuple) else cell
