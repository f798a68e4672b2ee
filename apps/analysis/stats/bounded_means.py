"""Clustered means of outcomes that are shares of units: F_att, A_att, a 0/1 outcome (issue #36 §1).

A response's F_att is 1 − supplied / required units of its item's key (OPB-01 §3), so it is a
count of units missed out of a known number: the item's responses are Binomial-like counts of
its units, and a cell's mean is a clustered rate with the item as cluster. Where such a mean is
small (or near 1), its clusters unequal in size and strongly correlated, the cluster
bootstrap-t under-covers, with the truth above the interval: the mean of a right-skewed cluster
distribution is carried by a few clusters a small sample often lacks (68–94 % at 10–80 items in
``tests/calibration``'s skewed designs; docs/analysis.md). The interval here chooses between two
methods by how skewed the estimate's sampling distribution is, read from the data as the
skewness of a binomial proportion of n* trials,

    γ* = |1 − 2ȳ| / √(n* · ȳ · (1 − ȳ)),

with n* Korn & Graubard's (1998, Survey Methodology 24(2)) effective sample size n / deff (with
their K − 1 degrees-of-freedom scaling) and ȳ the mean (the skewness of Binomial(n, p) / n is
(1 − 2p) / √(n·p·(1 − p)): Johnson, Kemp & Kotz 2005, *Univariate Discrete Distributions*, 3rd
ed., §3.2). How far a studentised interval's coverage falls from nominal grows with the
skewness of what it averages (Hall 1992, *The Bootstrap and Edgeworth Expansion*, §3.5; Boos &
Hughes-Oliver 2000, Am. Stat. 54(2)); for a small mean γ*² ≈ 1 / E*, E* = n* · min(ȳ, 1 − ȳ) the
**effective number of events** the clustered sample is worth, so a bound on γ* is a bound on E*
that relaxes as the mean moves away from 0 and 1:

- γ* ≤ ``BOOTSTRAP_T_MAX_SKEWNESS`` (0.16: E* ≥ 39 for a mean near 0, 33 at 5 %, 28 at 10 %, 9
  at 30 %): the cluster bootstrap-t of ``stats.bootstrap.family_cluster_bootstrap`` (Davison &
  Hinkley 1997 §5.2.1; Cameron, Gelbach & Miller 2008), calibrated where the sampling
  distribution is near symmetric;
- above it: the hull of Korn–Graubard on the mean (the responses' values summed per cluster),
  with mid-p tails (below), and the beta-binomial profile-likelihood interval of the units'
  counts per cluster (Williams 1975, Biometrics 31(4); Prentice 1986, JASA 81(394);
  ``stats.proportions``), the interval ``clustered_rate_interval`` reports for rates (issue #36
  §2) but for the mid-p tails. The beta-binomial's π is the
  expected share of an item's units missed; the cell mean estimates it when an item's F_att
  does not depend on its number of units or responses (the rates' assumption too). From
  ``CHI2_BELOW_CLUSTERS`` (15) clusters its likelihood-ratio cutoff is the F(1, K − 1)
  quantile, the small-sample reference that carries the K − 1 degrees of freedom of a
  K-cluster estimate; below 15 it is χ²₁'s (Wilks 1938, Ann. Math. Stat. 9(1)). There the hull
  (with the exact Korn–Graubard member, as it was chosen) with both members widened for K − 1
  df (Korn–Graubard's n* is already scaled by (t₍ₙ₋₁₎/t₍K₋₁₎)²) is conservative, 97.5–99.7 %
  on the suite's skewed designs at 10 clusters, and with the χ²₁ member covers 94.8–96.0 % on
  three of them (98.0–98.2 % on the two with a mean of 0.05); at 15 clusters the χ²₁ member
  would take a design to 94.0 %, near the band's lower edge, where the F(1, K − 1) one keeps
  95.3–97.6 %.

The hull's Korn–Graubard member is the mid-p Clopper–Pearson interval at Korn & Graubard's x*
and n* (``proportions.mid_p_interval``: Lancaster 1961, JASA 56(294); Berry & Armitage 1995,
The Statistician 44(4); Agresti & Gottard 2007, Comput. Stat. Data Anal. 51(12)), not their
exact one. An exact interval of a discrete count never covers below nominal, so it covers above
it, most where the count is a handful of events (Agresti & Coull 1998, Am. Stat. 52(2); Brown,
Cai & DasGupta 2001, Stat. Sci. 16(2)); the mid-p interval is the exact one with half the
probability of the observed count, which Agresti & Gottard advocate where strict conservatism
is not required. Here it is one member of a hull, which already covers where either member
would miss: with the exact member the rule covered 96.7–98.2 % on four of the suite's 36
designs (above the band's 96.5 %), with the mid-p member 33 of the 36 are in 93.5–96.5 % (32
with the exact member) and none below (the screen; docs/analysis.md gives the suite's figures).
Rates keep the exact member (``clustered_rate_interval``), whose target is ≥ 94 %, not a band.

Where γ* is above the bound and the values are not whole counts of their units (an F_att
averaged over raters, say), neither calibrated interval applies and the interval is reported
unavailable with that reason. The bound and the number of clusters were chosen by simulation on
the calibration suite's own designs (``tests/calibration/screen_cell_means.py``):
docs/analysis.md gives the screen and the suite's figures, and where the band's upper edge
(96.5 %) is still not met — a mean near 0.05 from 10 clusters, with one to five effective
events, whose discrete counts admit no interval both exact and short, and a mean near 0.1 from
80 clusters at ICC 0.3. The same screen rejected a choice by E* (the beta-binomial alone below
c = 3–10 effective events: F_att at 10 clusters falls to 88.6–91.5 %). γ* replaced
E* ≥ 30, which sent means near 0.3 from 10–20 clusters to the conservative hull (96.7–97.9 %
where the bootstrap-t alone covers 94–96 %).
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

# The bootstrap-t is used where γ*, the skewness of the estimate (module docstring), is at most
# this; the rate hull above it.
BOOTSTRAP_T_MAX_SKEWNESS = 0.16
# Below this many clusters the hull's beta-binomial member uses the χ²₁ reference, from it
# F(1, K − 1) (module docstring).
CHI2_BELOW_CLUSTERS = 15
HULL_METHOD = (
    "the hull of Korn–Graubard with mid-p tails (on the mean) and the beta-binomial "
    "profile-likelihood interval (on the units' counts, F(1, K − 1) reference), chosen because "
    "the estimate's skewness γ* "
    f"(as a binomial proportion of the effective sample size) is above "
    f"{BOOTSTRAP_T_MAX_SKEWNESS:g}"
)
SMALL_HULL_METHOD = (
    "the hull of Korn–Graubard with mid-p tails (on the mean) and the beta-binomial "
    "profile-likelihood interval "
    f"(on the units' counts, χ²₁ reference below {CHI2_BELOW_CLUSTERS} clusters), chosen "
    "because the estimate's skewness γ* (as a binomial proportion of the effective sample "
    f"size) is above {BOOTSTRAP_T_MAX_SKEWNESS:g}"
)
HULL_METHODS = (HULL_METHOD, SMALL_HULL_METHOD)
BOOTSTRAP_T_METHOD = METHOD_NAMES["studentized"]
# What an interval unavailable for too few clusters would have been (γ* is not computed then).
RULE_METHOD = (
    f"{BOOTSTRAP_T_METHOD} where the estimate's skewness γ* (as a binomial proportion of the "
    f"effective sample size) is at most {BOOTSTRAP_T_MAX_SKEWNESS:g}, else the hull of "
    "Korn–Graubard with mid-p tails and the beta-binomial profile-likelihood interval of the "
    "units' counts "
    f"(χ²₁ reference below {CHI2_BELOW_CLUSTERS} clusters, F(1, K − 1) from {CHI2_BELOW_CLUSTERS})"
)
NOT_COUNTS_NOTE = (
    "interval unavailable: the estimate's skewness γ* ({skewness:.3g}, from {events:.1f} "
    f"effective events) is above {BOOTSTRAP_T_MAX_SKEWNESS:g}, where the cluster bootstrap-t "
    "under-covers, and the values are not whole counts of their units, which the interval for "
    "that case needs (docs/analysis.md, issue #36)"
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


def estimate_skewness(estimate: float, effective_n: float) -> float:
    """γ* = |1 − 2ȳ| / √(n* · ȳ · (1 − ȳ)), the skewness of a binomial proportion ȳ of n*
    trials (module docstring); ∞ for a mean of 0 or 1 or no effective sample."""
    spread = effective_n * estimate * (1.0 - estimate)
    if spread <= 0.0:
        return float("inf")
    return abs(1.0 - 2.0 * estimate) / float(np.sqrt(spread))


def bootstrap_t_interval(
    sums: np.ndarray,
    sizes: np.ndarray,
    estimate: float,
    *,
    seed: int,
    aggregation: Aggregation,
    replicates: int,
    confidence: float,
) -> tuple[float, float] | None:
    """The cluster bootstrap-t of ``bootstrap.family_cluster_bootstrap``, clipped to [0, 1];
    ``None`` where the clusters (or every replicate) show no spread, as that function gives
    no interval there."""
    if cluster_standard_error(sums, sizes, estimate, aggregation) == 0.0:
        return None
    weights = cluster_weights(sums.size, replicates, np.random.default_rng(seed))
    try:
        (lower, upper), _, _ = studentized_interval(
            weights, sums, sizes, estimate, aggregation, confidence
        )
    except ValueError:  # no replicate with spread
        return None
    return max(lower, 0.0), min(upper, 1.0)


def beta_binomial_reference(n_clusters: int) -> str:
    """The reference distribution of the hull's beta-binomial member for K clusters:
    ``"chi2"`` below ``CHI2_BELOW_CLUSTERS``, else ``"F"`` (module docstring)."""
    return "chi2" if n_clusters < CHI2_BELOW_CLUSTERS else "F"


def rate_hull_interval(
    korn_graubard: tuple[float, float],
    counts: npt.ArrayLike,
    trials: npt.ArrayLike,
    *,
    confidence: float,
    reference: str = "F",
) -> tuple[float, float]:
    """The hull of a Korn–Graubard interval (the cell means pass its mid-p version) and the
    beta-binomial profile-likelihood interval of the units' ``counts`` out of ``trials`` per
    cluster, its likelihood-ratio cutoff from ``reference``
    (``proportions.beta_binomial_interval``: ``"F"`` or ``"chi2"``)."""
    _, (bb_lower, bb_upper) = beta_binomial_interval(
        counts, trials, confidence=confidence, reference=reference
    )
    return min(korn_graubard[0], bb_lower), max(korn_graubard[1], bb_upper)


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
    # Mid-p tails for the hull's member (module docstring); x* and n*, so E* and γ*, are
    # Korn & Graubard's either way.
    estimate, korn_graubard, n_eff, _ = korn_graubard_interval(
        s, m, aggregation=aggregation, confidence=confidence, mid_p=True
    )
    events = float(n_eff * min(estimate, 1.0 - estimate))
    skewness = estimate_skewness(estimate, n_eff)
    if skewness <= BOOTSTRAP_T_MAX_SKEWNESS:
        interval = bootstrap_t_interval(
            s,
            m,
            estimate,
            seed=seed,
            aggregation=aggregation,
            replicates=replicates,
            confidence=confidence,
        )
        note = NO_SPREAD_NOTE if interval is None else ""
        return estimate, interval, BOOTSTRAP_T_METHOD, events, note
    reference = beta_binomial_reference(s.size)
    method = SMALL_HULL_METHOD if reference == "chi2" else HULL_METHOD
    if counts is None or trials is None:
        note = NOT_COUNTS_NOTE.format(skewness=skewness, events=events)
        return estimate, None, method, events, note
    interval = rate_hull_interval(
        korn_graubard, counts, trials, confidence=confidence, reference=reference
    )
    return estimate, interval, method, events, ""


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

    The method by the estimate's skewness γ* (module docstring): the cluster bootstrap-t up to
    ``BOOTSTRAP_T_MAX_SKEWNESS``, else the hull of Korn–Graubard with mid-p tails and the
    beta-binomial interval of the units' counts (χ²₁ reference below ``CHI2_BELOW_CLUSTERS``
    clusters, F(1, K − 1) from it); no interval (with the reason) where neither
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
