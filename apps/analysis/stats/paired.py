"""A mean of paired differences with an interval clustered by pair (OPB-01 §5's three-way contrast).

The disclosure arm pairs each C_SPXI and C₀ item with its Family A base item; a contrast
"condition Y − condition X" is first summarised within each base item (one difference per base
item, the mean over the levels both arms were observed at), so the base item is the cluster and
the K differences are independent. Two interval methods, as the plan's ``interval_method`` says:

- ``analytic``: the paired t interval, mean ± t(K − 1) · s / √K (Student 1908; any text on the
  one-sample t, e.g. Casella & Berger, *Statistical Inference*, 2nd ed., §9.2.2), with no
  interval below ``max(min_clusters, ANALYTIC_MIN_PAIRS)`` pairs;
- ``bootstrap``: the cluster bootstrap-t of ``stats.bootstrap.family_cluster_bootstrap`` over
  the K differences (its own calibrated floor of 10 clusters applies).

Both also give the (1 − 2α) interval that TOST and the decision table's ``within`` read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.stats import t as t_distribution

from apps.analysis.stats.bootstrap import (
    NO_SPREAD_NOTE,
    BootstrapResult,
    family_cluster_bootstrap,
    unavailable_note,
)
from apps.analysis.stats.checks import check_confidence

# The paired t interval with fewer pairs than this is not reported: the same floor as the
# other analytic (t(K − 1)) intervals of the calibration suite (docs/analysis.md).
ANALYTIC_MIN_PAIRS = 6


@dataclass(frozen=True)
class PairedContrast:
    """A mean paired difference, its interval and its (1 − 2α) equivalence interval.

    ``interval`` is None when too few pairs contributed; ``pairs_required`` then says how many
    the plan (or the method) requires, and ``note`` says why.
    """

    estimate: float
    interval: tuple[float, float] | None
    equivalence_interval: tuple[float, float] | None
    n_pairs: int
    method: str
    pairs_required: int
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "estimate": self.estimate,
            "interval": None if self.interval is None else list(self.interval),
            "equivalence_interval": (
                None if self.equivalence_interval is None else list(self.equivalence_interval)
            ),
            "n_pairs": self.n_pairs,
            "interval_method": self.method,
        }
        if self.interval is None:
            out["pairs_required"] = self.pairs_required
            out["note"] = self.note
        return out


def paired_contrast(
    differences: npt.ArrayLike,
    *,
    method: str,
    confidence: float = 0.95,
    min_clusters: int = ANALYTIC_MIN_PAIRS,
    seed: int = 0,
    replicates: int = 2000,
) -> PairedContrast:
    """The mean of K per-pair differences with a ``confidence`` interval.

    ``analytic``: the paired t interval (Student 1908; Casella & Berger 2002, *Statistical
    Inference*, 2nd ed., §9.2.2); ``bootstrap``: the cluster bootstrap-t (Davison & Hinkley
    1997 §5.2.1) of ``stats.bootstrap.family_cluster_bootstrap``.

    Args:
        differences: 1-D array of K finite differences, one per pair (base item), in the
            measure's units (F_att: proportion of required units; R: proportion refused).
        method: ``"analytic"`` (paired t) or ``"bootstrap"`` (cluster bootstrap-t).
        confidence: nominal coverage in (0, 1); the equivalence interval has 1 − 2(1 − c).
        min_clusters: the plan's minimum number of pairs; the method's floor is never lowered.
        seed, replicates: for the bootstrap.

    Raises:
        ValueError: no differences, a non-finite one, an unknown method or a confidence
            outside (0, 1).
    """
    d = np.asarray(differences, dtype=float).ravel()
    if d.size == 0:
        raise ValueError("no pairs: a paired contrast needs at least one pair")
    if not np.all(np.isfinite(d)):
        raise ValueError("differences must be finite")
    check_confidence(confidence)
    equivalence = 1 - 2 * (1 - confidence)
    k = int(d.size)
    if method == "analytic":
        required = max(min_clusters, ANALYTIC_MIN_PAIRS)
        name = "paired t, t(pairs − 1) critical values"
        if k < required:
            return PairedContrast(
                float(d.mean()), None, None, k, name, required, unavailable_note(k, required)
            )
        se = float(d.std(ddof=1) / np.sqrt(k))
        mean = float(d.mean())
        if se == 0.0:  # every pair alike: no zero-width interval (issue #36)
            return PairedContrast(mean, None, None, k, name, required, NO_SPREAD_NOTE)

        def t_interval(coverage: float) -> tuple[float, float]:
            half = float(t_distribution.ppf(0.5 + coverage / 2, k - 1)) * se
            return (mean - half, mean + half)

        return PairedContrast(
            mean, t_interval(confidence), t_interval(equivalence), k, name, required
        )
    if method != "bootstrap":
        raise ValueError(f"method must be 'analytic' or 'bootstrap', got {method!r}")
    labels = np.arange(k)

    def bootstrap(coverage: float) -> BootstrapResult:
        return family_cluster_bootstrap(
            d,
            labels,
            confidence=coverage,
            seed=seed,
            aggregation="cluster_mean",
            replicates=replicates,
            min_clusters=min_clusters,
        )

    main = bootstrap(confidence)
    eq = bootstrap(equivalence)
    name = "cluster bootstrap-t over pairs"
    return PairedContrast(
        float(main.estimate),
        main.interval,
        eq.interval,
        k,
        name,
        main.min_clusters,
        main.note,
    )


def newcombe_paired_interval(
    both: float,
    first_only: float,
    second_only: float,
    neither: float,
    *,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Newcombe's hybrid score interval for a difference of paired proportions, p₁ − p₂.

    Newcombe 1998, "Improved confidence intervals for the difference between binomial
    proportions based on paired data", *Stat Med* 17:2635–2650, method 10: Wilson score
    limits (l₁, u₁) for p₁ = (a + b)/n and (l₂, u₂) for p₂ = (a + c)/n, combined by "square and
    add" with φ̂, the correlation of the paired 0/1 values (its numerator ad − bc shrunk by n/2
    towards 0 when positive, and φ̂ = 0 when a margin is empty):

        L = θ̂ − √((p₁ − l₁)² − 2φ̂(p₁ − l₁)(u₂ − p₂) + (u₂ − p₂)²)
        U = θ̂ + √((p₂ − l₂)² − 2φ̂(p₂ − l₂)(u₁ − p₁) + (u₁ − p₁)²)

    with θ̂ = (b − c)/n. Fagerland, Lydersen & Laake 2014 (*Stat Med* 33:2850–2875)
    recommend it among the closed-form paired intervals. Wilson limits come from statsmodels'
    ``proportion_confint(method="wilson")``. Never zero-width for n ≥ 1: a table with no event
    (a = b = c = 0) gives a symmetric interval around 0 of half-width ≈ z²/(n + z²).

    Args:
        both, first_only, second_only, neither: the paired 2×2 counts a (1, 1), b (1, 0),
            c (0, 1) and d (0, 0): pairs with the event under the first member, the second,
            both or neither; fractional where they are effective counts (the design-effect
            scaled counts of ``task_blocks.clustered_score_interval``).
        confidence: nominal coverage in (0, 1).

    Returns:
        (lower, upper) for p₁ − p₂, a difference of proportions in [−1, 1].

    Raises:
        ValueError: a negative count, no pairs, or ``confidence`` outside (0, 1).
    """
    from statsmodels.stats.proportion import proportion_confint

    a, b, c, d = both, first_only, second_only, neither
    if min(a, b, c, d) < 0:
        raise ValueError(f"paired counts must be >= 0, got a={a}, b={b}, c={c}, d={d}")
    n = a + b + c + d
    if not n > 0:
        raise ValueError("no pairs: the paired 2×2 table is empty")
    check_confidence(confidence)
    alpha = 1 - confidence
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = (float(x) for x in proportion_confint(a + b, n, alpha, method="wilson"))
    l2, u2 = (float(x) for x in proportion_confint(a + c, n, alpha, method="wilson"))
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    cross = a * d - b * c
    if margins == 0 or 0 <= cross <= n / 2:
        phi = 0.0
    else:
        phi = (cross - n / 2 if cross > 0 else cross) / float(np.sqrt(margins))
    theta = (b - c) / n
    low_part = (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2
    high_part = (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2
    return (theta - float(np.sqrt(max(low_part, 0.0))), theta + float(np.sqrt(max(high_part, 0.0))))
