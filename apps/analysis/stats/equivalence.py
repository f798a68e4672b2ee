"""Two one-sided tests (TOST) for equivalence within a margin ε (OPB-01 §7 "≈ 0 within ε").

Schuirmann, D. J. (1987), "A comparison of the two one-sided tests procedure and the power
approach for assessing the equivalence of average bioavailability", J. Pharmacokinet.
Biopharm. 15(6): 657–680: the difference is declared equivalent to 0 when both one-sided tests
reject H0: Δ ≤ lower and H0: Δ ≥ upper, i.e. when the (1 − 2α) confidence interval lies strictly
inside the open margin (lower, upper) — (−ε, ε) when symmetric. A bound exactly on the margin
is not inside; ``stats.decision``'s ``within`` reads the boundary the same way. Asymmetric
margins are Lakens (2017), "Equivalence Tests", Soc. Psychol. Personal. Sci. 8(4) §"TOST"
(low and high equivalence bounds). Computed with statsmodels' ``ttost_ind``/``ttost_paired``
and checked against R ``equivalence::tost``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW, ttost_ind, ttost_paired


@dataclass(frozen=True)
class TostResult:
    """TOST outcome; ``p_lower`` tests H0: diff ≤ −ε, ``p_upper`` tests H0: diff ≥ ε."""

    mean_diff: float
    p_lower: float
    p_upper: float
    p_value: float
    ci: tuple[float, float]
    ci_level: float
    df: float
    epsilon: float | None
    margin: tuple[float, float]
    alpha: float
    equivalent: bool
    design: str
    n_x: int
    n_y: int | None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["ci"] = list(self.ci)
        out["margin"] = list(self.margin)
        return out


def tost(
    x: npt.ArrayLike,
    y: npt.ArrayLike | None = None,
    *,
    epsilon: float | None = None,
    margin: tuple[float, float] | None = None,
    paired: bool = False,
    var_equal: bool = False,
    alpha: float = 0.05,
) -> TostResult:
    """TOST of mean(x) − mean(y) (or mean(x) alone) against (−ε, ε) or (lower, upper).

    Schuirmann 1987 (J. Pharmacokinet. Biopharm. 15(6)); asymmetric bounds as Lakens 2017
    (Soc. Psychol. Personal. Sci. 8(4)); Welch–Satterthwaite df for unequal variances (Welch
    1947, Biometrika 34). See the module docstring.

    Designs, as R ``equivalence::tost(x, y, epsilon, paired, var.equal)``:
    - ``y is None``: one sample, e.g. per-item differences already taken; df = n − 1;
    - ``paired=True``: the differences x − y, pairs matched by position; df = n − 1;
    - otherwise two independent samples, Welch–Satterthwaite df (``var_equal=False``) or the
      pooled variance (``var_equal=True``).

    Args:
        x, y: 1-D arrays of finite values in the outcome's units.
        epsilon: the frozen symmetric equivalence margin ε > 0 (same units): (−ε, ε).
        margin: instead of ``epsilon``, an asymmetric margin ``(lower, upper)`` with
            lower < 0 < upper (same units). Give exactly one of the two.
        alpha: size of each one-sided test; the interval is the (1 − 2α) interval.

    Returns:
        :class:`TostResult`; ``p_value`` = max(p_lower, p_upper) and ``equivalent`` is
        ``p_value < alpha``, which is the same as the (1 − 2α) interval lying strictly inside
        the margin. ``epsilon`` is None in the result when the margin was asymmetric.

    Raises:
        ValueError: neither or both of ``epsilon`` and ``margin``, ε ≤ 0, a margin that does
            not satisfy lower < 0 < upper, α outside (0, 0.5), fewer than 2 values in a
            sample, missing or non-finite values (R drops them silently; a preregistered
            analysis must exclude them explicitly), unequal lengths for ``paired``,
            ``paired`` without ``y``.
    """
    if (epsilon is None) == (margin is None):
        raise ValueError("give exactly one of epsilon (symmetric) and margin (lower, upper)")
    if epsilon is not None:
        if not np.isfinite(epsilon) or epsilon <= 0:
            raise ValueError(f"epsilon must be > 0, got {epsilon!r}")
        low, upp = -float(epsilon), float(epsilon)
    else:
        assert margin is not None
        if len(margin) != 2:
            raise ValueError(f"margin must be (lower, upper), got {margin!r}")
        low, upp = float(margin[0]), float(margin[1])
        if not (np.isfinite(low) and np.isfinite(upp)) or not low < 0 < upp:
            raise ValueError(f"margin must satisfy lower < 0 < upper, got {margin!r}")
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha!r}")
    a = _sample(x, "x")
    b = None if y is None else _sample(y, "y")

    if b is None or paired:
        if b is None and paired:
            raise ValueError("paired=True needs y")
        if b is not None and a.size != b.size:
            raise ValueError(f"paired samples differ in length: {a.size} vs {b.size}")
        diffs = a if b is None else a - b
        stats = DescrStatsW(diffs)
        if b is None:
            _, lower, upper = stats.ttost_mean(low, upp)
        else:
            _, lower, upper = ttost_paired(a, b, low, upp)
        ci = stats.tconfint_mean(alpha=2 * alpha)
        df = float(diffs.size - 1)
        mean_diff = float(stats.mean)
        design = "one-sample" if b is None else "paired"
    else:
        usevar = "pooled" if var_equal else "unequal"
        _, lower, upper = ttost_ind(a, b, low, upp, usevar=usevar)
        compare = CompareMeans(DescrStatsW(a), DescrStatsW(b))
        ci = compare.tconfint_diff(alpha=2 * alpha, usevar=usevar)
        df = float(compare.ttest_ind(usevar=usevar)[2])
        mean_diff = float(a.mean() - b.mean())
        design = "independent, pooled variance" if var_equal else "independent, Welch"

    p_lower, p_upper = float(lower[1]), float(upper[1])
    p_value = float(max(p_lower, p_upper))
    return TostResult(
        mean_diff=mean_diff,
        p_lower=p_lower,
        p_upper=p_upper,
        p_value=p_value,
        ci=(float(ci[0]), float(ci[1])),
        ci_level=1 - 2 * alpha,
        df=df,
        epsilon=None if epsilon is None else float(epsilon),
        margin=(low, upp),
        alpha=alpha,
        equivalent=p_value < alpha,
        design=design,
        n_x=int(a.size),
        n_y=None if b is None else int(b.size),
    )


def _sample(values: npt.ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size < 2:
        raise ValueError(f"{name} needs at least 2 values, got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} has missing or non-finite values; exclude them explicitly")
    return arr
