"""Segmented slopes over consecutive levels and the descriptive index ρ_OP = β_A / β_B.

OPB-01 §7: segmented slopes L0→L1, L1→L2, L2→L3 are reported next to the overall coefficient
because threshold effects are expected; ρ_OP is reported with uncertainty, never alone, and is
unstable when β_B is small. Both are computed here on the response scale (e.g. F_att units per
level) from per-level means; the primary inference stays with the beta regression.

ρ_OP's interval is the plain percentile interval of the ratio of the two families' bootstrap
slopes (Efron & Tibshirani 1993, *An Introduction to the Bootstrap*, §13.3; items resampled as
Davison & Hinkley 1997 §3.8 resample the top level). It is a descriptive index and is not in the
calibration suite: a ratio's interval is unbounded when β_B's interval reaches 0 (Fieller 1954,
J. R. Stat. Soc. B 16(2)), which is what the ``unstable`` flag reports.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from apps.analysis.stats.bootstrap import (
    DEFAULT_MIN_CLUSTERS,
    DEFAULT_REPLICATES,
    cluster_weights,
    percentile_interval,
)
from apps.analysis.stats.checks import check_confidence

SHARED_LEVELS = (0, 1, 2, 3)
# Default for "β_B is small": 0.05 F_att units per level, i.e. 15 points over L0–L3. The plan
# should freeze its own value; this default only keeps an unfrozen call from being silent.
DEFAULT_MIN_ABS_BETA_B = 0.05


def segment_name(lo: int, hi: int) -> str:
    return f"L{lo}→L{hi}"


def segmented_slopes(
    level_means: Mapping[int, float | None], levels: Sequence[int] = SHARED_LEVELS
) -> dict[str, float | None]:
    """Slopes between consecutive levels from per-level means (OPB-01 §7).

    Args:
        level_means: level → mean outcome at that level (response units, e.g. F_att).
            A level that is absent or maps to ``None`` is not observed.
        levels: the ordered levels whose consecutive pairs form the segments.

    Returns:
        ``{"L0→L1": m1 − m0, ...}`` (per one level step); a segment touching an unobserved
        level is ``None`` — never interpolated across the gap.

    Raises:
        ValueError: fewer than two levels, levels not strictly increasing, a non-finite mean.
    """
    _check_levels(levels)
    out: dict[str, float | None] = {}
    for lo, hi in itertools.pairwise(levels):
        a, b = level_means.get(lo), level_means.get(hi)
        for lev, v in ((lo, a), (hi, b)):
            if v is not None and not np.isfinite(v):
                raise ValueError(f"mean at level {lev} is not finite: {v!r}")
        out[segment_name(lo, hi)] = None if a is None or b is None else (b - a) / (hi - lo)
    return out


def level_slope(level_means: Mapping[int, float]) -> float:
    """Ordinary least-squares slope of per-level means on level, each level weighted equally.

    Σ (l − l̄)·m_l / Σ (l − l̄)², the least-squares slope of simple linear regression (e.g.
    Weisberg 2005, *Applied Linear Regression*, 3rd ed., §2.1).

    Raises:
        ValueError: fewer than two levels with a mean.
    """
    levels = np.array(sorted(level_means), dtype=float)
    if levels.size < 2:
        raise ValueError(f"a slope needs at least two levels, got {levels.tolist()}")
    means = np.array([level_means[int(lev)] for lev in levels], dtype=float)
    return float(_contrast(levels) @ means)


@dataclass(frozen=True)
class FamilySlope:
    family: str
    estimate: float
    interval: tuple[float, float] | None
    level_means: dict[int, float]
    segments: dict[str, float | None]
    n_items: int
    dropped_replicates: int = 0


@dataclass(frozen=True)
class OpRatioResult:
    """β_A, β_B and ρ_OP = β_A / β_B with percentile intervals and the stability verdict."""

    beta_a: FamilySlope
    beta_b: FamilySlope
    rho: float | None
    rho_interval: tuple[float, float] | None
    unstable: bool
    reasons: tuple[str, ...]
    levels: tuple[int, ...]
    aggregation: str
    confidence: float
    replicates: int
    seed: int
    min_abs_beta_b: float
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        def slope(s: FamilySlope) -> dict[str, Any]:
            return {
                "family": s.family,
                "estimate": s.estimate,
                "interval": list(s.interval) if s.interval else None,
                "level_means": {str(k): v for k, v in s.level_means.items()},
                "segments": dict(s.segments),
                "n_items": s.n_items,
                "dropped_replicates": s.dropped_replicates,
            }

        return {
            "beta_A": slope(self.beta_a),
            "beta_B": slope(self.beta_b),
            "rho_OP": self.rho,
            "rho_OP_interval": list(self.rho_interval) if self.rho_interval else None,
            "unstable": self.unstable,
            "reasons": list(self.reasons),
            "levels": list(self.levels),
            "aggregation": self.aggregation,
            "confidence": self.confidence,
            "replicates": self.replicates,
            "seed": self.seed,
            "min_abs_beta_b": self.min_abs_beta_b,
            "notes": list(self.notes),
        }


def op_ratio(
    data: pd.DataFrame,
    *,
    seed: int,
    value: str = "f_att",
    level: str = "level",
    item: str = "item",
    family: str = "family",
    family_a: str = "A",
    family_b: str = "B",
    levels: Sequence[int] = SHARED_LEVELS,
    aggregation: Literal["observation", "cluster_mean"] = "observation",
    replicates: int = DEFAULT_REPLICATES,
    confidence: float = 0.95,
    min_clusters: int = DEFAULT_MIN_CLUSTERS,
    min_abs_beta_b: float = DEFAULT_MIN_ABS_BETA_B,
) -> OpRatioResult:
    """ρ_OP = β_A / β_B with an item-clustered percentile bootstrap (OPB-01 §7).

    β_f is the OLS slope (least squares on the level, each level weighted equally) of family
    f's per-level means on level over ``levels`` (the shared
    region L0–L3 by default; Family B is never authored above L3). A per-level mean is the mean
    of that level's responses (``aggregation="observation"``) or the mean of the items' means at
    that level (``"cluster_mean"``). Items are resampled with replacement within each family,
    independently for A and B (B's draws first, then A's: the §9 analysis order), keeping all
    of an item's cells together.

    ρ_OP is flagged ``unstable`` when |β_B| < ``min_abs_beta_b``, when β_B's interval covers 0,
    or when an interval is unavailable (fewer than ``min_clusters`` items). Replicates whose
    β_B is exactly 0, or that lack every response at a level, give no finite value and are
    left out of that interval; their number is reported.

    Args:
        data: one row per scored response, with columns ``value`` (outcome in [0, 1] or any
            finite units), ``level`` (int), ``item`` (cluster id) and ``family``.
        seed: seed for ``numpy.random.default_rng``.
        levels: ordered levels the slopes run over; each must be observed in both families.

    Raises:
        ValueError: missing columns or values, non-finite outcomes, a family with no rows, a
            level in ``levels`` not observed in a family (absent cells are never approximated),
            bad ``aggregation``/``confidence``/``replicates``.
    """
    if aggregation not in ("observation", "cluster_mean"):
        raise ValueError(
            f"aggregation must be 'observation' or 'cluster_mean', got {aggregation!r}"
        )
    if replicates < 1:
        raise ValueError(f"replicates must be >= 1, got {replicates}")
    check_confidence(confidence)
    _check_levels(levels)
    columns = [value, level, item, family]
    missing = [c for c in columns if c not in data.columns]
    if missing:
        raise ValueError(f"data has no column(s) {missing}")
    for column in columns:
        if data[column].isna().any():
            raise ValueError(f"column {column!r} has missing values")
    if not np.all(np.isfinite(data[value].to_numpy(float))):
        raise ValueError(f"column {value!r} has non-finite values")

    rng = np.random.default_rng(seed)
    shared = data[data[level].isin(levels)]

    # Family B first, then A: one generator, so the order fixes each family's resamples.
    (slope_b, reps_b), (slope_a, reps_a) = [
        _family_slope(
            shared,
            code,
            value,
            level,
            item,
            family,
            levels,
            aggregation,
            replicates,
            min_clusters,
            rng,
            confidence,
        )
        for code in (family_b, family_a)
    ]

    reasons = []
    if abs(slope_b.estimate) < min_abs_beta_b:
        reasons.append(f"|beta_B| = {abs(slope_b.estimate):.6g} is below {min_abs_beta_b:g}")
    if slope_b.interval is None:
        reasons.append("beta_B interval unavailable (too few items)")
    elif slope_b.interval[0] <= 0.0 <= slope_b.interval[1]:
        reasons.append("beta_B interval covers 0")
    if slope_a.interval is None:
        reasons.append("beta_A interval unavailable (too few items)")

    rho = None if slope_b.estimate == 0.0 else slope_a.estimate / slope_b.estimate
    rho_interval = None
    notes = []
    if reps_a is not None and reps_b is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = reps_a / reps_b
        finite = np.isfinite(ratios)
        if finite.any():
            rho_interval = percentile_interval(ratios, confidence)
        if not finite.all():
            notes.append(
                f"{int((~finite).sum())} replicates gave no finite ratio and were left out"
            )
    return OpRatioResult(
        beta_a=slope_a,
        beta_b=slope_b,
        rho=rho,
        rho_interval=rho_interval,
        unstable=bool(reasons),
        reasons=tuple(reasons),
        levels=tuple(levels),
        aggregation=aggregation,
        confidence=confidence,
        replicates=replicates,
        seed=seed,
        min_abs_beta_b=min_abs_beta_b,
        notes=tuple(notes),
    )


def _family_slope(
    data: pd.DataFrame,
    name: str,
    value: str,
    level: str,
    item: str,
    family: str,
    levels: Sequence[int],
    aggregation: str,
    replicates: int,
    min_clusters: int,
    rng: np.random.Generator,
    confidence: float,
) -> tuple[FamilySlope, np.ndarray | None]:
    frame = data[data[family] == name]
    if frame.empty:
        raise ValueError(f"family {name!r} has no responses at levels {list(levels)}")
    observed = set(frame[level].unique())
    absent = [lev for lev in levels if lev not in observed]
    if absent:
        raise ValueError(f"family {name!r} has no responses at level(s) {absent}")
    sums, counts = _item_level_table(frame, value, level, item, levels, aggregation)
    contrast = _contrast(np.asarray(levels, dtype=float))
    means = sums.sum(axis=0) / counts.sum(axis=0)
    estimate = float(contrast @ means)
    level_means = {int(lev): float(m) for lev, m in zip(levels, means, strict=True)}
    n_items = sums.shape[0]
    interval: tuple[float, float] | None = None
    reps: np.ndarray | None = None
    dropped = 0
    if n_items >= min_clusters:
        weights = cluster_weights(n_items, replicates, rng).astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            reps = ((weights @ sums) / (weights @ counts)) @ contrast
        dropped = int((~np.isfinite(reps)).sum())
        interval = percentile_interval(reps, confidence)
    slope = FamilySlope(
        family=name,
        estimate=estimate,
        interval=interval,
        level_means=level_means,
        segments=segmented_slopes(level_means, levels),
        n_items=n_items,
        dropped_replicates=dropped,
    )
    return slope, reps


def _item_level_table(
    frame: pd.DataFrame, value: str, level: str, item: str, levels: Sequence[int], aggregation: str
) -> tuple[np.ndarray, np.ndarray]:
    """Items × levels tables of sums and counts (the weights a per-level mean needs)."""
    grouped = frame.groupby([item, level], sort=True)[value].agg(["sum", "count", "mean"])
    if aggregation == "cluster_mean":
        # One unit per item present at a level, carrying the item's mean there.
        grouped["sum"], grouped["count"] = grouped["mean"], 1
    sums = grouped["sum"].unstack(level).reindex(columns=list(levels)).fillna(0.0)
    counts = grouped["count"].unstack(level).reindex(columns=list(levels)).fillna(0)
    return sums.to_numpy(float), counts.to_numpy(float)


def _contrast(levels: np.ndarray) -> np.ndarray:
    centred = levels - levels.mean()
    weights: np.ndarray = centred / np.sum(centred**2)
    return weights


def _check_levels(levels: Sequence[int]) -> None:
    if len(levels) < 2:
        raise ValueError(f"need at least two levels, got {list(levels)}")
    if any(b <= a for a, b in itertools.pairwise(levels)):
        raise ValueError(f"levels must be strictly increasing, got {list(levels)}")
