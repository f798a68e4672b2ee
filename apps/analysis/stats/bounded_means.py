"""Clustered means of outcomes that are shares of units: F_att, A_att, a 0/1 outcome (issue #36 §1).

A response's F_att is 1 − supplied / required units of its item's key (OPB-01 §3), so it is a
count of units missed out of a known number: the item's responses are Binomial-like counts of
its units, and a cell's mean is a clustered rate with the item as cluster. Where such a mean is
small (or near 1), its clusters unequal in size and strongly correlated, the cluster
bootstrap-t under-covers, with the truth above the interval: the mean of a right-skewed cluster
distribution is carried by a few clusters a small sample often lacks (68–94 % at 10–80 items in
``tests/calibration``'s skewed designs; docs/analysis.md). The interval here chooses between two
methods by a quantity computed from the data, the **effective number of events**

    E* = n* · min(ȳ, 1 − ȳ),

Korn & Graubard's (1998, Survey Methodology 24(2)) effective sample size n* = n / deff (with
their K − 1 degrees-of-freedom scaling) times the smaller of the mean and its complement — the
number of independent "events" the clustered sample is worth:

- E* ≥ ``BOOTSTRAP_T_MIN_EFFECTIVE_EVENTS``: the cluster bootstrap-t of
  ``stats.bootstrap.family_cluster_bootstrap`` (Davison & Hinkley 1997 §5.2.1; Cameron,
  Gelbach & Miller 2008), calibrated where the sampling distribution is near symmetric;
- below it: the hull of Korn–Graubard on the mean (the responses' values summed per cluster)
  and the beta-binomial profile-likelihood interval of the units' counts per cluster (Williams
  1975, Biometrics 31(4); Prentice 1986, JASA 81(394); ``stats.proportions``), the interval
  ``clustered_rate_interval`` reports for rates (issue #36 §2). The beta-binomial's π is the
  expected share of an item's units missed; the cell mean estimates it when an item's F_att
  does not depend on its number of units or responses (the rates' assumption too).

Where E* is below the threshold and the values are not whole counts of their units (an F_att
averaged over raters, say), neither calibrated interval applies and the interval is reported
unavailable with that reason. The threshold, 30, was chosen by simulation: docs/analysis.md
gives the screen and the suite's figures.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

from apps.analysis.stats.bootstrap import (
    DEFAULT_REPLICATES,
    METHOD_NAMES,
    MIN_CLUSTERS_FLOOR,
    NO_SPREAD_NOTE,
    Aggregation,
    _cluster_codes,
    cluster_standard_error,
    cluster_weights,
    studentized_interval,
    unavailable_note,
)
from apps.analysis.stats.proportions import beta_binomial_interval, korn_graubard_interval

# Below this many effective events (E*, the module docstring) the bootstrap-t is not used.
BOOTSTRAP_T_MIN_EFFECTIVE_EVENTS = 30.0
HULL_METHOD = (
    "the hull of Korn–Graubard (on the mean) and the beta-binomial profile-likelihood interval "
    "(on the units' counts), chosen because the effective number of events is below "
    f"{BOOTSTRAP_T_MIN_EFFECTIVE_EVENTS:g}"
)
BOOTSTRAP_T_METHOD = METHOD_NAMES["studentized"]
# What an interval unavailable for too few clusters would have been (E* is not computed then).
RULE_METHOD = (
    f"{BOOTSTRAP_T_METHOD} where the effective number of events is at least "
    f"{BOOTSTRAP_T_MIN_EFFECTIVE_EVENTS:g}, else the hull of Korn–Graubard and the "
    "beta-binomial profile-likelihood interval of the units' counts"
)
NOT_COUNTS_NOTE = (
    "interval unavailable: the effective number of events ({events:.1f}) is below "
    f"{BOOTSTRAP_T_MIN_EFFECTIVE_EVENTS:g}, where the cluster bootstrap-t under-covers, and the "
    "values are not whole counts of their units, which the interval for that case needs "
    "(docs/analysis.md, issue #36)"
)
# Values × units within this of a whole number count as whole (F_att stored as a decimal).
_WHOLE = 1e-6


@dataclass(frozen=True)
class BoundedMean:
    """A clustered mean of shares of units with its interval (None where unavailable)."""

    estimate: float
    interval: tuple[float, float] | None
    method: str
    effective_events: float | None
    n_clusters: int
    n_observations: int
    confidence: float
    min_clusters: int
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["interval"] = list(self.interval) if self.interval is not None else None
        return out


def effective_events(
    sums: npt.ArrayLike,
    sizes: npt.ArrayLike,
    *,
    aggregation: Aggregation = "observation",
    confidence: float = 0.95,
) -> float:
    """E* = n* · min(ȳ, 1 − ȳ) of per-cluster sums of values in [0, 1] (module docstring).

    n* is :func:`proportions.korn_graubard_interval`'s effective sample size (Korn & Graubard
    1998), ȳ the mean under ``aggregation``. Raises as that function does.
    """
    mean, _, n_eff, _ = korn_graubard_interval(
        sums, sizes, aggregation=aggregation, confidence=confidence
    )
    return float(n_eff * min(mean, 1.0 - mean))


def bounded_mean_from_clusters(
    sums: npt.ArrayLike,
    sizes: npt.ArrayLike,
    counts: npt.ArrayLike | None,
    trials: npt.ArrayLike | None,
    *,
    seed: int,
    aggregation: Aggregation = "observation",
    replicates: int = DEFAULT_REPLICATES,
    confidence: float = 0.95,
) -> tuple[float, tuple[float, float] | None, str, float, str]:
    """The interval of :func:`bounded_mean_interval` from per-cluster summaries.

    Args:
        sums: length-K sums of the values (each in [0, 1]) per cluster.
        sizes: length-K numbers of responses per cluster (> 0).
        counts: length-K whole counts of units per cluster (Σ value × units), or ``None`` when
            the values are not whole counts of their units.
        trials: length-K units per cluster (Σ units), or ``None`` with ``counts``.
        seed: seed of the bootstrap-t's draws (``numpy.random.default_rng``).
        aggregation, replicates, confidence: as ``bootstrap.family_cluster_bootstrap``.

    Returns:
        ``(estimate, interval or None, method, E*, note)``.

    Raises:
        ValueError: as :func:`proportions.korn_graubard_interval`.
    """
    s = np.asarray(sums, dtype=float)
    m = np.asarray(sizes, dtype=float)
    estimate, (kg_lower, kg_upper), n_eff, _ = korn_graubard_interval(
        s, m, aggregation=aggregation, confidence=confidence
    )
    events = float(n_eff * min(estimate, 1.0 - estimate))
    if events >= BOOTSTRAP_T_MIN_EFFECTIVE_EVENTS:
        if cluster_standard_error(s, m, estimate, aggregation) == 0.0:
            return estimate, None, BOOTSTRAP_T_METHOD, events, NO_SPREAD_NOTE
        weights = cluster_weights(s.size, replicates, np.random.default_rng(seed))
        try:
            (lower, upper), _, _ = studentized_interval(
                weights, s, m, estimate, aggregation, confidence
            )
        except ValueError:  # no replicate with spread: as family_cluster_bootstrap, none
            return estimate, None, BOOTSTRAP_T_METHOD, events, NO_SPREAD_NOTE
        return estimate, (max(lower, 0.0), min(upper, 1.0)), BOOTSTRAP_T_METHOD, events, ""
    if counts is None or trials is None:
        return estimate, None, HULL_METHOD, events, NOT_COUNTS_NOTE.format(events=events)
    _, (bb_lower, bb_upper) = beta_binomial_interval(counts, trials, confidence=confidence)
    return (
        estimate,
        (min(kg_lower, bb_lower), max(kg_upper, bb_upper)),
        HULL_METHOD,
        events,
        "",
    )


def bounded_mean_interval(
    values: npt.ArrayLike,
    clusters: npt.ArrayLike,
    units: npt.ArrayLike | None = None,
    *,
    seed: int,
    aggregation: Aggregation = "observation",
    replicates: int = DEFAULT_REPLICATES,
    confidence: float = 0.95,
    min_clusters: int = MIN_CLUSTERS_FLOOR,
) -> BoundedMean:
    """Mean of clustered shares of units (F_att, A_att, 0/1) with a calibrated interval.

    The method by the effective number of events (module docstring): the cluster bootstrap-t
    from ``BOOTSTRAP_T_MIN_EFFECTIVE_EVENTS`` on, else the hull of Korn–Graubard and the
    beta-binomial interval of the units' counts; no interval (with the reason) where neither
    applies, with fewer than ``min_clusters`` clusters (raised to ``MIN_CLUSTERS_FLOOR``, the
    fewest the suite measured), or where every cluster has the same value and the bootstrap-t
    would be used.

    Args:
        values: 1-D array of n values in [0, 1] (e.g. F_att per response).
        clusters: 1-D array of n cluster labels (the item).
        units: 1-D array of n positive unit counts each value is a share of (F_att: the item's
            required units); ``None`` means 1 each (a 0/1 outcome).
        seed, aggregation, replicates, confidence, min_clusters: as
            ``bootstrap.family_cluster_bootstrap``.

    Returns:
        :class:`BoundedMean`.

    Raises:
        ValueError: mismatched or empty inputs, values outside [0, 1] or not finite, units not
            positive, missing cluster labels, ``confidence`` outside (0, 1).
    """
    x = np.asarray(values, dtype=float)
    codes, k = _cluster_codes(clusters, x.shape)
    if not np.all(np.isfinite(x)) or np.any(x < 0) or np.any(x > 1):
        raise ValueError("values must be finite and in [0, 1]")
    u = np.ones_like(x) if units is None else np.asarray(units, dtype=float)
    if u.shape != x.shape or not np.all(np.isfinite(u)) or np.any(u <= 0):
        raise ValueError("units must be positive, one per value")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    required = max(min_clusters, MIN_CLUSTERS_FLOOR)
    sums = np.bincount(codes, weights=x, minlength=k)
    sizes = np.bincount(codes, minlength=k).astype(float)
    mean = float(np.mean(sums / sizes)) if aggregation == "cluster_mean" else float(x.mean())
    base = partial(
        BoundedMean,
        n_clusters=k,
        n_observations=int(x.size),
        confidence=confidence,
        min_clusters=required,
    )
    if k < required:
        return base(
            estimate=mean,
            interval=None,
            method=RULE_METHOD,
            effective_events=None,
            note=unavailable_note(k, required),
        )
    per_unit = x * u
    whole = np.round(per_unit)
    is_counts = bool(np.all(np.abs(per_unit - whole) <= _WHOLE) and np.all(u == np.round(u)))
    counts = np.bincount(codes, weights=whole, minlength=k) if is_counts else None
    trials = np.bincount(codes, weights=u, minlength=k) if is_counts else None
    estimate, interval, method, events, note = bounded_mean_from_clusters(
        sums,
        sizes,
        counts,
        trials,
        seed=seed,
        aggregation=aggregation,
        replicates=replicates,
        confidence=confidence,
    )
    return base(
        estimate=estimate,
        interval=interval,
        method=method,
        effective_events=events,
        note=note,
    )
