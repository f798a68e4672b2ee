"""Differences of means and rates between two conditions, and ratios of rates, with intervals
clustered as a plan says (the general comparison pipeline, ``apps/studies/comparison``).

Each function takes the outcome ``y`` of the observations of two conditions (one per response;
0/1 for a rate, a finite number for a mean), a 0/1 ``treated`` marker (1: the condition named
first in the plan's comparison, "B" of "B − A"; 0: its reference "A") and the cluster label of
each observation (item, prompt or block; one label per observation when unclustered).

- **Difference, clustered** (:func:`clustered_difference`): the coefficient of ``treated`` in
  the OLS regression y = a + d·treated (for 0/1 outcomes the linear probability model, whose
  coefficient is exactly the difference of the two rates), with the CR2 ("bias-reduced
  linearisation") cluster-robust variance of Bell, R. M. & McCaffrey, D. F. (2002), "Bias
  reduction in standard errors for linear regression with multi-stage samples", Survey
  Methodology 28(2): 169–181, and t critical values on their Satterthwaite degrees of freedom as
  Imbens, G. W. & Kolesár, M. (2016), "Robust standard errors in small samples: some practical
  advice", Review of Economics and Statistics 98(4): 701–712, give them (§III, eq. 10); the
  combination Pustejovsky, J. E. & Tipton, E. (2018), J. Business & Economic Statistics 36(4):
  672–683, recommend, and R's clubSandwich computes. Where the clusters are nested in the
  conditions (each item in one condition: the compared regressor is constant within clusters)
  the degrees of freedom are computed under the random-effects working model Imbens & Kolesár
  recommend for such regressors (§IV; its two variance components estimated from the
  residuals); where clusters cross the conditions (a block holding both), and for the level of
  one condition, under independence.
  Under independence the nested designs with ICC 0.2 covered 91.7–93.2 % at 10–40 clusters a
  condition; under the random-effects model 93.7–97.0 % (and crossed designs, whose contrast
  sheds the shared cluster effect, 96.1–98.3 % instead of 93.7–96.9 %), and one condition's
  mean 95.3–97.0 % instead of 93.5–95.3 % (independence kept for both): tests/calibration,
  docs/analysis.md. The CR1 sandwich with t(G − 1) (Cameron &
  Miller 2015, J. Human Resources 50(2)) under-covered here with unequal cluster sizes (86–93 %
  at 10–20 clusters a condition): tests/calibration. The same formula serves clusters nested in
  conditions (each item in one condition) and clusters crossed with them (a block holding the
  same prompt under both conditions: the pairing is then in the variance).
- **Difference of rates, unclustered** (:func:`independent_rate_difference`): Newcombe's
  hybrid score interval (Newcombe, R. G. 1998, "Interval estimation for the difference between
  independent proportions: comparison of eleven methods", Statistics in Medicine 17(8):
  873–890, method 10), computed by statsmodels' ``confint_proportions_2indep(method="newcomb")``.
- **Ratio of rates** (:func:`clustered_rate_ratio`): log(p_B / p_A) with the delta-method
  variance V_BB/p_B² + V_AA/p_A² − 2·V_AB/(p_A·p_B) from the cluster-robust covariance of the two
  rates (the cell-means regression y = p_A·[A] + p_B·[B], CR2 and Bell–McCaffrey t as above),
  and the interval exponentiated: the log interval of Katz, D., Baptista, J., Azen, S. P. &
  Pike, M. C. (1978), "Obtaining confidence intervals for the risk ratio in cohort studies",
  Biometrics 34(3): 469–474, with a cluster-robust variance. Unclustered, it is Katz's
  interval itself (statsmodels' ``confint_proportions_2indep(compare="ratio",
  method="log")``). A rate of 0 in either condition has no finite log: the ratio is then
  unavailable, with the reason.
- **Level of one condition** (:func:`clustered_mean`): the mean with the CR2 standard error of
  the intercept-only regression and Bell–McCaffrey t, as above. Rates of one
  condition use ``stats.proportions.rate_interval`` (Korn–Graubard) instead: never zero-width.

Below ``DIFFERENCE_MIN_CLUSTERS_FLOOR`` clusters in either condition the estimate is reported and
its interval is unavailable, with the reason, never approximated. The floor is what the
calibration suite measured (tests/calibration/test_calibration.py; docs/analysis.md):
with 10 clusters a condition the clustered intervals cover 93.5–96.5 % (the ratio of rates
with ICC 0.2 nested: 97.2 %).
An estimate with no spread at all (every observation of both conditions alike) has a zero
standard error: its interval is unavailable too ("no variation"), never the point [d, d].
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy.stats import t as t_distribution
from statsmodels.stats.proportion import confint_proportions_2indep

from apps.analysis.stats.checks import check_confidence, cluster_codes

DIFFERENCE_MIN_CLUSTERS_FLOOR = 10
CLUSTERED = "OLS with CR2 cluster-robust standard errors, Bell–McCaffrey t"
NEWCOMBE = "Newcombe hybrid score (method 10), unclustered"
LOG_RATIO = "log ratio, delta method with CR2 covariance, Bell–McCaffrey t"
# Added to a method's name where the clusters are nested in the conditions: its degrees of
# freedom come from the random-effects working model (module docstring).
RANDOM_EFFECTS_DF = " (degrees of freedom under the random-effects working model)"
KATZ = "Katz log interval, unclustered"
NO_VARIATION = "no variation: every observation of the compared conditions is alike"


@dataclass(frozen=True)
class Comparison:
    """One difference (or ratio, or level) with its interval.

    ``estimate`` (None only when it cannot be formed: a ratio with a zero reference rate);
    ``interval`` ([lower, upper] or None, with ``note`` saying why); ``standard_error`` on the
    estimate's scale (the log scale for a ratio); ``df`` the t degrees of freedom; ``n`` and
    ``n_clusters`` the observations and clusters used; ``method`` names the interval.
    """

    estimate: float | None
    interval: tuple[float, float] | None
    standard_error: float | None
    df: float | None
    n: int
    n_clusters: int
    confidence: float
    method: str
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["interval"] = None if self.interval is None else list(self.interval)
        if not self.note:
            out.pop("note")
        return out


def _arrays(
    y: npt.ArrayLike, treated: npt.ArrayLike, clusters: npt.ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    values = np.asarray(y, dtype=float)
    marks = np.asarray(treated, dtype=float)
    labels = pd.Series(np.asarray(clusters, dtype=object))
    if values.ndim != 1 or marks.shape != values.shape or labels.size != values.size:
        raise ValueError("y, treated and clusters must be 1-D arrays of equal length")
    if not np.all(np.isfinite(values)):
        raise ValueError("y must be finite")
    if not np.all((marks == 0) | (marks == 1)):
        raise ValueError("treated must be 0 or 1")
    codes, k = cluster_codes(labels)
    return values, marks, codes, k


def _too_few(marks: np.ndarray, codes: np.ndarray, required: int) -> str:
    """Why an interval is unavailable for want of clusters, or ''."""
    short = [
        f"{len(np.unique(codes[marks == arm]))} cluster(s) in the {name} condition"
        for arm, name in ((1, "compared"), (0, "reference"))
        if len(np.unique(codes[marks == arm])) < required
    ]
    if not short:
        return ""
    return f"{' and '.join(short)}, fewer than the {required} an interval needs"


@dataclass(frozen=True)
class _Cluster:
    """One cluster's rows of the design and its CR2 adjustment A_g = (I − H_gg)^(−1/2), kept
    as its low-rank form I + U·diag(d)·U' (H_gg = X_g M X_g' has rank ≤ p): A_g is never
    formed, so a cluster of thousands of rows costs a thin SVD."""

    x: np.ndarray
    u: np.ndarray
    d: np.ndarray
    residuals: np.ndarray

    def adjust(self, v: np.ndarray) -> np.ndarray:
        adjusted: np.ndarray = v + self.u @ (self.d * (self.u.T @ v))
        return adjusted


@dataclass(frozen=True)
class _Fit:
    """An OLS fit with its CR2 covariance, and what Bell–McCaffrey's degrees of freedom need."""

    beta: np.ndarray
    cov: np.ndarray
    bread: np.ndarray
    clusters: list[_Cluster]

    def contrast(
        self, weights: npt.ArrayLike, *, random_effects: bool = False
    ) -> tuple[float, float, float]:
        """(ℓ'β, its CR2 standard error, Bell–McCaffrey degrees of freedom) for contrast ℓ.

        The degrees of freedom are (Σλ)² / Σλ² over the eigenvalues λ of G'ΩG, where G's
        column g is (I − H)_g A_g X_g M ℓ and Ω is the working model of the errors' covariance
        (Imbens & Kolesár 2016, §III eq. 10 and §IV; Bell & McCaffrey 2002). With M = (X'X)⁻¹,
        a_g = A_g X_g M ℓ and B's column g = X_g'a_g:
        - Ω = I (``random_effects`` False): G'G = diag(a_g'a_g) − B'MB;
        - Ω = σ²_ε·I + σ²_ν·(1 1' within each cluster), the random-effects working model
          Imbens & Kolesár recommend where the regressor of interest is constant within
          clusters (§IV): G'ΩG = σ²_ε·G'G + σ²_ν·C'C with C = diag(1'a_g) − S'MB, S's column h
          the column sums X_h'1 of cluster h; σ²_ε and σ²_ν are the ANOVA (method of moments)
          components of the OLS residuals (``residual_components``). The degrees of freedom
          depend on their ratio only.
        """
        ell = np.asarray(weights, dtype=float)
        m_ell = self.bread @ ell
        a = [c.adjust(c.x @ m_ell) for c in self.clusters]
        b = np.column_stack([c.x.T @ a_g for c, a_g in zip(self.clusters, a, strict=True)])
        gram = np.diag([float(a_g @ a_g) for a_g in a]) - b.T @ self.bread @ b
        within, between = (
            residual_components([c.residuals for c in self.clusters])
            if random_effects
            else (1.0, 0.0)
        )
        if between > 0:
            sums = np.column_stack([c.x.sum(axis=0) for c in self.clusters])
            c_matrix = np.diag([float(a_g.sum()) for a_g in a]) - sums.T @ self.bread @ b
            gram = within * gram + between * (c_matrix.T @ c_matrix)
        eigen = np.clip(np.linalg.eigvalsh(gram), 0.0, None)
        df = float(eigen.sum() ** 2 / (eigen**2).sum()) if eigen.sum() > 0 else 1.0
        return float(ell @ self.beta), float(np.sqrt(max(ell @ self.cov @ ell, 0.0))), df


def residual_components(groups: list[np.ndarray]) -> tuple[float, float]:
    """(σ²_ε, σ²_ν): the within- and between-cluster variance components of residuals grouped
    by cluster, by the ANOVA (method of moments) estimator for unbalanced one-way data:
    σ²_ε = MSW, σ²_ν = max(0, (MSB − MSW) / n₀), n₀ = (N − Σn_g² / N) / (K − 1) (Searle, S. R.,
    Casella, G. & McCulloch, C. E. 1992, *Variance Components*, Wiley, §3.5). (0, 0) when they
    cannot be told apart: fewer than two clusters, or no cluster with two observations.
    """
    sizes = np.array([g.size for g in groups], dtype=float)
    k, total = len(groups), float(sizes.sum())
    if k < 2 or total <= k:
        return 0.0, 0.0
    means = np.array([g.mean() for g in groups])
    grand = float(np.concatenate(groups).mean())
    within = float(sum(((g - g.mean()) ** 2).sum() for g in groups)) / (total - k)
    between_mean_square = float((sizes * (means - grand) ** 2).sum()) / (k - 1)
    n0 = (total - float((sizes**2).sum()) / total) / (k - 1)
    return within, max(0.0, (between_mean_square - within) / n0)


def _nested(marks: np.ndarray, codes: np.ndarray) -> bool:
    """Whether every cluster lies in one condition (the compared condition is constant within
    clusters: a cluster-level regressor)."""
    order = np.argsort(codes, kind="stable")
    cuts = np.flatnonzero(np.diff(codes[order])) + 1
    return all(np.ptp(part) == 0 for part in np.split(marks[order], cuts))


def _fit(design: np.ndarray, y: np.ndarray, codes: np.ndarray) -> _Fit:
    """OLS of ``y`` on ``design`` with the CR2 ("bias-reduced linearisation") cluster-robust
    covariance: M · Σ_g X_g' A_g e_g e_g' A_g X_g · M with A_g = (I − H_gg)^(−1/2) (Bell &
    McCaffrey 2002; Pustejovsky & Tipton 2018, J. Bus. Econ. Stat. 36(4): 672–683). A cluster
    whose I − H_gg is singular (it alone fixes a coefficient) takes the pseudo-inverse root."""
    bread = np.linalg.pinv(design.T @ design)
    root = np.linalg.cholesky(bread + 1e-15 * np.eye(bread.shape[0]))
    beta = bread @ design.T @ y
    residuals = y - design @ beta
    meat = np.zeros_like(bread)
    clusters = []
    order = np.argsort(codes, kind="stable")
    for index in np.split(order, np.flatnonzero(np.diff(codes[order])) + 1):
        x_g = design[index]
        u, sigma, _ = np.linalg.svd(x_g @ root, full_matrices=False)
        rest = 1.0 - sigma**2  # the eigenvalues of I − H_gg on the span of U
        d = np.where(rest > 1e-10, 1.0 / np.sqrt(np.clip(rest, 1e-10, None)), 0.0) - 1.0
        cluster = _Cluster(x_g, u, d, residuals[index])
        score = x_g.T @ cluster.adjust(residuals[index])
        meat += np.outer(score, score)
        clusters.append(cluster)
    return _Fit(beta, bread @ meat @ bread, bread, clusters)


def _t_interval(estimate: float, se: float, df: float, confidence: float) -> tuple[float, float]:
    half = float(t_distribution.ppf(1 - (1 - confidence) / 2, df)) * se
    return estimate - half, estimate + half


def clustered_difference(
    y: npt.ArrayLike,
    treated: npt.ArrayLike,
    clusters: npt.ArrayLike,
    *,
    confidence: float = 0.95,
    min_clusters: int = DIFFERENCE_MIN_CLUSTERS_FLOOR,
) -> Comparison:
    """Mean (or rate) of the treated condition minus the reference's, with its cluster-robust
    interval (module docstring: OLS, CR2, Bell–McCaffrey t; Bell & McCaffrey 2002).

    Args:
        y: 1-D outcomes (0/1 for rates, finite numbers for means).
        treated: 1-D 0/1, same length (1: the compared condition B, 0: the reference A).
        clusters: 1-D cluster labels, same length.
        confidence: e.g. 0.95.
        min_clusters: the plan's minimum per condition, raised to the floor.

    Raises:
        ValueError: mismatched or non-finite inputs, a condition with no observation, a
            ``confidence`` outside (0, 1).
    """
    check_confidence(confidence)
    values, marks, codes, g = _arrays(y, treated, clusters)
    if not (marks == 1).any() or not (marks == 0).any():
        raise ValueError("both conditions need at least one observation")
    estimate = float(values[marks == 1].mean() - values[marks == 0].mean())
    nested = _nested(marks, codes)
    base: dict[str, Any] = {
        "n": int(values.size),
        "n_clusters": g,
        "confidence": confidence,
        "method": CLUSTERED + (RANDOM_EFFECTS_DF if nested else ""),
    }
    why = _too_few(marks, codes, max(min_clusters, DIFFERENCE_MIN_CLUSTERS_FLOOR))
    if why:
        return Comparison(estimate, None, None, None, note=why, **base)
    fit = _fit(np.column_stack([np.ones_like(values), marks]), values, codes)
    _, se, df = fit.contrast([0.0, 1.0], random_effects=nested)
    if not se > 1e-12:
        return Comparison(estimate, None, 0.0, df, note=NO_VARIATION, **base)
    return Comparison(estimate, _t_interval(estimate, se, df, confidence), se, df, **base)


def clustered_mean(
    y: npt.ArrayLike,
    clusters: npt.ArrayLike,
    *,
    confidence: float = 0.95,
    min_clusters: int = DIFFERENCE_MIN_CLUSTERS_FLOOR,
) -> Comparison:
    """The mean of one condition with its cluster-robust interval (intercept-only OLS, CR2,
    Bell–McCaffrey t; module docstring). Raises ValueError as :func:`clustered_difference`."""
    check_confidence(confidence)
    values, _, codes, g = _arrays(y, np.zeros(np.size(y)), clusters)
    if values.size == 0:
        raise ValueError("no observation")
    base: dict[str, Any] = {
        "n": int(values.size),
        "n_clusters": g,
        "confidence": confidence,
        "method": CLUSTERED,
    }
    estimate = float(values.mean())
    required = max(min_clusters, DIFFERENCE_MIN_CLUSTERS_FLOOR)
    if g < required:
        return Comparison(
            estimate, None, None, None, note=f"{g} cluster(s), fewer than {required}", **base
        )
    fit = _fit(np.ones((values.size, 1)), values, codes)
    _, se, df = fit.contrast([1.0])
    if not se > 1e-12:
        return Comparison(estimate, None, 0.0, df, note=NO_VARIATION, **base)
    return Comparison(estimate, _t_interval(estimate, se, df, confidence), se, df, **base)


def independent_rate_difference(
    y: npt.ArrayLike, treated: npt.ArrayLike, *, confidence: float = 0.95
) -> Comparison:
    """p_B − p_A of two independent samples of 0/1 outcomes with Newcombe's hybrid score
    interval (Newcombe 1998, method 10; statsmodels ``confint_proportions_2indep``).

    Raises:
        ValueError: outcomes not 0/1, a condition with no observation, bad ``confidence``.
    """
    check_confidence(confidence)
    values, marks, _, _ = _arrays(y, treated, np.arange(np.size(y)))
    if not np.all((values == 0) | (values == 1)):
        raise ValueError("rates need outcomes of 0 or 1")
    x1, n1 = int(values[marks == 1].sum()), int((marks == 1).sum())
    x0, n0 = int(values[marks == 0].sum()), int((marks == 0).sum())
    if not n1 or not n0:
        raise ValueError("both conditions need at least one observation")
    lo, hi = confint_proportions_2indep(
        x1, n1, x0, n0, method="newcomb", compare="diff", alpha=1 - confidence
    )
    return Comparison(
        x1 / n1 - x0 / n0,
        (float(lo), float(hi)),
        None,
        None,
        n=n1 + n0,
        n_clusters=n1 + n0,
        confidence=confidence,
        method=NEWCOMBE,
    )


def clustered_rate_ratio(
    y: npt.ArrayLike,
    treated: npt.ArrayLike,
    clusters: npt.ArrayLike,
    *,
    confidence: float = 0.95,
    min_clusters: int = DIFFERENCE_MIN_CLUSTERS_FLOOR,
    clustered: bool = True,
) -> Comparison:
    """p_B / p_A with the log interval (Katz et al. 1978), its variance by the delta method from
    the cluster-robust covariance of the two rates (module docstring), or Katz's own
    (statsmodels) when ``clustered`` is False.

    The estimate is None when p_A = 0 (no ratio); the interval is None when either rate is 0
    (no finite log), below the cluster floor, or with no variation, with the reason in ``note``.

    Raises:
        ValueError: outcomes not 0/1, a condition with no observation, bad ``confidence``.
    """
    check_confidence(confidence)
    values, marks, codes, g = _arrays(y, treated, clusters)
    if not np.all((values == 0) | (values == 1)):
        raise ValueError("rates need outcomes of 0 or 1")
    if not (marks == 1).any() or not (marks == 0).any():
        raise ValueError("both conditions need at least one observation")
    p1, p0 = float(values[marks == 1].mean()), float(values[marks == 0].mean())
    base: dict[str, Any] = {"n": int(values.size), "n_clusters": g, "confidence": confidence}
    estimate = p1 / p0 if p0 > 0 else None
    if p0 == 0 or p1 == 0:
        zero = "reference" if p0 == 0 else "compared"
        note = f"the {zero} condition's rate is 0: the ratio's log interval is undefined"
        return Comparison(estimate, None, None, None, method=LOG_RATIO, note=note, **base)
    if not clustered:
        x1, n1 = int(values[marks == 1].sum()), int((marks == 1).sum())
        x0, n0 = int(values[marks == 0].sum()), int((marks == 0).sum())
        lo, hi = confint_proportions_2indep(
            x1, n1, x0, n0, method="log", compare="ratio", alpha=1 - confidence
        )
        return Comparison(p1 / p0, (float(lo), float(hi)), None, None, method=KATZ, **base)
    nested = _nested(marks, codes)
    method = LOG_RATIO + (RANDOM_EFFECTS_DF if nested else "")
    why = _too_few(marks, codes, max(min_clusters, DIFFERENCE_MIN_CLUSTERS_FLOOR))
    if why:
        return Comparison(estimate, None, None, None, method=method, note=why, **base)
    # The delta method's gradient of log p_B − log p_A on the cell-means coefficients (p_A, p_B).
    fit = _fit(np.column_stack([1 - marks, marks]), values, codes)
    _, se, df = fit.contrast([-1.0 / p0, 1.0 / p1], random_effects=nested)
    if not se > 1e-12:
        return Comparison(estimate, None, 0.0, df, method=method, note=NO_VARIATION, **base)
    lo, hi = _t_interval(math.log(p1 / p0), se, df, confidence)
    return Comparison(estimate, (math.exp(lo), math.exp(hi)), se, df, method=method, **base)
