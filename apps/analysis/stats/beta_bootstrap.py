"""Cluster bootstrap of beta-regression coefficients, every replicate fitted at once.

OPB-01 §7 asks for beta regression of F_att and an interval method frozen in the plan; when that
method is the bootstrap, the clusters (items) are resampled and the model refitted per
replicate. Refitting with ``BetaModel`` 10,000 times takes minutes, so here a replicate is the
full data set with integer frequency weights (how often each observation's cluster was drawn),
and all replicates are fitted together by Fisher scoring over ``replicates × n`` arrays.

Model (Ferrari & Cribari-Neto 2004): y ~ Beta(μφ, (1 − μ)φ), logit μ = Xβ, log φ = θ constant.
The score and the expected (Fisher) information are those of the paper's §2, with each
observation's contribution multiplied by its frequency weight; the precision is estimated on
the log scale, as R ``betareg`` and statsmodels do. With all weights 1 the fit is the ordinary
maximum-likelihood fit (checked against ``betareg.fit_beta_regression`` in the tests).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy.special import digamma, expit, polygamma

from apps.analysis.stats.bootstrap import (
    cluster_weights,
    expanded_percentile_interval,
    unavailable_note,
)
from apps.analysis.stats.checks import cluster_codes

MAX_ITERATIONS = 50
TOLERANCE = 1e-9
# The fewest items the calibration suite shows a slope's interval covering at 93 % or more with
# (item random slope SD 0.2; docs/analysis.md): the cluster-robust Wald interval from 6 items;
# the expanded percentile bootstrap covers 91.8 % at 6, so it keeps the bootstrap floor of 10.
SLOPE_MIN_CLUSTERS_FLOOR = 6
BOOTSTRAP_SLOPE_MIN_CLUSTERS_FLOOR = 10


def fit_beta_weighted(
    y: npt.ArrayLike,
    X: npt.ArrayLike,
    weights: npt.ArrayLike,
    *,
    start: npt.ArrayLike,
    max_iterations: int = MAX_ITERATIONS,
    tolerance: float = TOLERANCE,
) -> tuple[np.ndarray, np.ndarray]:
    """Weighted maximum-likelihood beta regressions, one per row of ``weights``, by Fisher scoring.

    The score and expected information of Ferrari & Cribari-Neto 2004 (J. Appl. Stat. 31(7)
    §2), each observation's contribution multiplied by its frequency weight (module docstring).

    Args:
        y: length-n outcome strictly inside (0, 1) (squeeze F_att first).
        X: n × k design matrix of the mean model (logit link), e.g. ``[1, level]``.
        weights: B × n non-negative frequency weights (bootstrap draw counts per observation);
            a 1-D length-n array is one fit.
        start: length k + 1 starting values ``(β_1 … β_k, log φ)``, e.g. the full-sample fit.
        max_iterations, tolerance: a fit converges when its largest step is below ``tolerance``.

    Returns:
        ``(params, converged)``: a B × (k + 1) array of ``(β…, log φ)`` and a length-B bool
        array; fits that did not converge (or became non-finite) hold NaN.

    Raises:
        ValueError: shapes that do not match, y outside (0, 1), negative or non-finite weights.
    """
    y = np.asarray(y, dtype=float)
    X = np.asarray(X, dtype=float)
    W = np.asarray(weights, dtype=float)
    single = W.ndim == 1
    W = np.atleast_2d(W)
    n, k = X.shape if X.ndim == 2 else (-1, -1)
    if X.ndim != 2 or y.shape != (n,) or W.shape[1] != n:
        raise ValueError(f"shapes do not match: y {y.shape}, X {X.shape}, weights {W.shape}")
    if np.any((y <= 0) | (y >= 1)) or not np.all(np.isfinite(y)):
        raise ValueError("y must lie strictly inside (0, 1); squeeze it first")
    if not np.all(np.isfinite(W)) or np.any(W < 0):
        raise ValueError("weights must be finite and >= 0")
    theta = np.tile(np.asarray(start, dtype=float), (W.shape[0], 1))
    if theta.shape[1] != k + 1:
        raise ValueError(f"start needs {k + 1} values (k coefficients and log phi)")

    # μ, and with it every digamma and trigamma term, depends on an observation only through
    # its row of X; y enters the score only through sums. So observations are grouped by
    # distinct design row and each fit works on replicates × rows arrays, not replicates × n.
    rows, onehot = _design_rows(X)
    counts = W @ onehot  # B × R: weighted number of observations per design row
    sum_ystar = W @ (onehot * (np.log(y) - np.log1p(-y))[:, None])
    sum_log1m = W @ (onehot * np.log1p(-y)[:, None])

    params, converged = _fit_sufficient(
        theta, rows, counts, sum_ystar, sum_log1m, max_iterations, tolerance
    )
    return (params[0], converged[:1]) if single else (params, converged)


def _design_rows(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # The distinct rows of X (R × k) and the n × R one-hot map of each observation to its row.
    rows, row_of = np.unique(X, axis=0, return_inverse=True)
    onehot = np.zeros((X.shape[0], rows.shape[0]))
    onehot[np.arange(X.shape[0]), row_of.reshape(-1)] = 1.0
    return rows, onehot


def _fit_sufficient(
    theta: np.ndarray,
    rows: np.ndarray,
    counts: np.ndarray,
    sum_ystar: np.ndarray,
    sum_log1m: np.ndarray,
    max_iterations: int,
    tolerance: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Fisher scoring from per-design-row sufficient statistics, every fit at once."""
    active = np.ones(theta.shape[0], dtype=bool)
    converged = np.zeros(theta.shape[0], dtype=bool)
    for _ in range(max_iterations):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        step = _fisher_step(theta[idx], rows, counts[idx], sum_ystar[idx], sum_log1m[idx])
        bad = ~np.all(np.isfinite(step), axis=1)
        theta[idx] += np.where(bad[:, None], 0.0, step)
        done = ~bad & (np.max(np.abs(step), axis=1, initial=0.0) < tolerance)
        converged[idx[done]] = True
        active[idx[done | bad]] = False
    params: np.ndarray = np.where(converged[:, None], theta, np.nan)
    return params, converged


def fit_beta_many(
    Y: npt.ArrayLike,
    X: npt.ArrayLike,
    *,
    start: npt.ArrayLike,
    max_iterations: int = MAX_ITERATIONS,
    tolerance: float = TOLERANCE,
) -> tuple[np.ndarray, np.ndarray]:
    """Maximum-likelihood beta regressions of many outcome vectors on one design, at once.

    The same model and Fisher scoring as :func:`fit_beta_weighted` (Ferrari & Cribari-Neto 2004
    §2), for S outcome vectors sharing the design X (e.g. simulated data sets).

    Args:
        Y: S × n outcomes strictly inside (0, 1).
        X: n × k design matrix.
        start: length k + 1 starting values ``(β…, log φ)`` for every fit.

    Returns:
        ``(params, converged)``: S × (k + 1) and length S; NaN where a fit did not converge.

    Raises:
        ValueError: shapes that do not match or outcomes outside (0, 1).
    """
    Y = np.atleast_2d(np.asarray(Y, dtype=float))
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or Y.shape[1] != X.shape[0]:
        raise ValueError(f"shapes do not match: Y {Y.shape}, X {X.shape}")
    if not np.all(np.isfinite(Y)) or np.any((Y <= 0) | (Y >= 1)):
        raise ValueError("Y must lie strictly inside (0, 1); squeeze it first")
    theta = np.tile(np.asarray(start, dtype=float), (Y.shape[0], 1))
    rows, onehot = _design_rows(X)
    counts = np.tile(onehot.sum(axis=0), (Y.shape[0], 1))
    return _fit_sufficient(
        theta,
        rows,
        counts,
        (np.log(Y) - np.log1p(-Y)) @ onehot,
        np.log1p(-Y) @ onehot,
        max_iterations,
        tolerance,
    )


def beta_scores(Y: npt.ArrayLike, X: npt.ArrayLike, params: npt.ArrayLike) -> np.ndarray:
    """Per-observation scores of the beta regression (Ferrari & Cribari-Neto 2004 §2, eq. 3).

    U_β = φ (y* − μ*) μ(1 − μ) x and, on the log φ scale,
    U_logφ = φ [μ (y* − μ*) + log(1 − y) − ψ((1 − μ)φ) + ψ(φ)], with y* = logit y and
    μ* = ψ(μφ) − ψ((1 − μ)φ).

    Args:
        Y: S × n (or length-n) outcomes in (0, 1); X: n × k; params: S × (k + 1) (or k + 1).

    Returns:
        S × n × (k + 1) array (n × (k + 1) for one fit).
    """
    single = np.ndim(Y) == 1
    Y = np.atleast_2d(np.asarray(Y, dtype=float))
    X = np.asarray(X, dtype=float)
    theta = np.atleast_2d(np.asarray(params, dtype=float))
    beta, phi = theta[:, :-1], np.exp(theta[:, -1])[:, None]
    mu = expit(beta @ X.T)  # S × n
    a, b = mu * phi, (1.0 - mu) * phi
    resid = (np.log(Y) - np.log1p(-Y)) - (digamma(a) - digamma(b))
    u_beta = (phi * resid * mu * (1.0 - mu))[:, :, None] * X[None, :, :]
    u_phi = phi * (mu * resid + np.log1p(-Y) - digamma(b) + digamma(phi))
    out = np.concatenate([u_beta, u_phi[:, :, None]], axis=2)
    return out[0] if single else out


def beta_information(X: npt.ArrayLike, params: npt.ArrayLike) -> np.ndarray:
    """Expected (Fisher) information of the beta regression, (β…, log φ) scale.

    Ferrari & Cribari-Neto 2004 §2 (the K matrix), as R ``betareg`` and statsmodels'
    ``cov_type="eim"`` use it. X: n × k; params: S × (k + 1) (or k + 1). Returns S × (k+1) ×
    (k+1) (or (k+1) × (k+1)).
    """
    single = np.ndim(params) == 1
    X = np.asarray(X, dtype=float)
    theta = np.atleast_2d(np.asarray(params, dtype=float))
    rows, row_of = np.unique(X, axis=0, return_inverse=True)
    counts = np.bincount(row_of.reshape(-1), minlength=rows.shape[0]).astype(float)
    info = _information(theta, rows, np.tile(counts, (theta.shape[0], 1)))
    return info[0] if single else info


def beta_cluster_robust(
    Y: npt.ArrayLike,
    X: npt.ArrayLike,
    params: npt.ArrayLike,
    clusters: npt.ArrayLike,
) -> tuple[np.ndarray, int]:
    """Cluster-robust (sandwich) covariance of beta-regression estimates, clustered by item.

    V = c · I⁻¹ (Σ_g U_g U_gᵀ) I⁻¹ with I the expected information (:func:`beta_information`),
    U_g the sum of cluster g's observation scores (:func:`beta_scores`) and the CR1 small-sample
    factor c = G/(G − 1) · (n − 1)/(n − p) (Liang & Zeger 1986, Biometrika 73(1); Cameron &
    Miller 2015, "A Practitioner's Guide to Cluster-Robust Inference", J. Hum. Resour. 50(2)
    §II.C and §VI, which also gives the t(G − 1) critical values callers should use). It
    accounts for items whose slopes differ (an item random slope) without modelling them.

    Args:
        Y: S × n (or length-n) outcomes; X: n × k; params: S × (k + 1) (or k + 1) fitted
            ``(β…, log φ)``; clusters: length-n labels (the item of each response).

    Returns:
        ``(covariance, G)``: S × (k+1) × (k+1) (or (k+1) × (k+1)) on the (β…, log φ) scale,
        and the number of clusters G.

    Raises:
        ValueError: fewer than 2 clusters or mismatched lengths.
    """
    single = np.ndim(Y) == 1
    X = np.asarray(X, dtype=float)
    codes, uniques = pd.factorize(pd.Series(np.asarray(clusters, dtype=object)), sort=True)
    if codes.size != X.shape[0] or (codes < 0).any():
        raise ValueError("clusters must give a label for every observation")
    g = len(uniques)
    if g < 2:
        raise ValueError(f"a cluster-robust covariance needs at least 2 clusters, got {g}")
    scores = beta_scores(np.atleast_2d(np.asarray(Y, dtype=float)), X, np.atleast_2d(params))
    onehot = np.zeros((codes.size, g))
    onehot[np.arange(codes.size), codes] = 1.0
    per_cluster = np.einsum("ng,snp->sgp", onehot, scores)
    meat = np.einsum("sgp,sgq->spq", per_cluster, per_cluster)
    bread = np.linalg.inv(beta_information(X, np.atleast_2d(params)))
    n, p = X.shape[0], X.shape[1] + 1
    factor = g / (g - 1) * (n - 1) / (n - p)
    cov = factor * bread @ meat @ bread
    return (cov[0] if single else cov), g


def _fisher_step(
    theta: np.ndarray, X: np.ndarray, N: np.ndarray, SY: np.ndarray, SL: np.ndarray
) -> np.ndarray:
    """One Fisher-scoring step per replicate, from per-design-row sufficient statistics.

    X: R × k distinct design rows; N, SY, SL: B × R weighted counts, sums of logit(y) and
    sums of log(1 − y) per row. Returns the B × (k + 1) steps in (β…, log φ).
    """
    beta, phi = theta[:, :-1], np.exp(theta[:, -1])[:, None]
    mu = expit(beta @ X.T)  # B × R
    a, b = mu * phi, (1.0 - mu) * phi
    dmu = mu * (1.0 - mu)  # dμ/dη for the logit link
    mustar = digamma(a) - digamma(b)
    resid = SY - N * mustar  # Σ w (y* − μ*) per row

    score_beta = (phi * dmu * resid) @ X  # B × k
    score_phi = np.sum(mu * resid + SL - N * (digamma(b) - digamma(phi)), axis=1)
    score = np.column_stack([score_beta, phi[:, 0] * score_phi])  # log φ scale

    info = _information(theta, X, N)
    try:
        return np.linalg.solve(info, score[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:
        # Some replicate's information is singular (e.g. its draws hold one level only): that
        # replicate stops with NaN, the others go on.
        out = np.full_like(score, np.nan)
        for i in range(score.shape[0]):
            with contextlib.suppress(np.linalg.LinAlgError):
                out[i] = np.linalg.solve(info[i], score[i])
        return out


def _information(theta: np.ndarray, X: np.ndarray, N: np.ndarray) -> np.ndarray:
    """Expected information per fit from distinct design rows X (R × k) and counts N (B × R)."""
    beta, phi = theta[:, :-1], np.exp(theta[:, -1])[:, None]
    mu = expit(beta @ X.T)
    a, b = mu * phi, (1.0 - mu) * phi
    dmu = mu * (1.0 - mu)
    t1, t2 = _trigamma(a), _trigamma(b)
    k = X.shape[1]
    wbb = N * phi**2 * (t1 + t2) * dmu**2
    wbp = N * phi * dmu * (t1 * mu - t2 * (1.0 - mu))
    dpp = N * (t1 * mu**2 + t2 * (1.0 - mu) ** 2 - _trigamma(phi))
    info = np.empty((theta.shape[0], k + 1, k + 1))
    for j in range(k):
        for m in range(j, k):
            info[:, j, m] = info[:, m, j] = wbb @ (X[:, j] * X[:, m])
        info[:, j, k] = info[:, k, j] = phi[:, 0] * (wbp @ X[:, j])
    info[:, k, k] = phi[:, 0] ** 2 * dpp.sum(axis=1)
    return info


def _trigamma(x: np.ndarray) -> np.ndarray:
    values: np.ndarray = polygamma(1, x)  # scipy.special is untyped
    return values


@dataclass(frozen=True)
class BetaBootstrapResult:
    """Expanded percentile intervals of beta-regression coefficients from a cluster bootstrap.

    ``replicates`` is the B × (k + 1) array of refitted ``(β…, log φ)`` (NaN where a replicate
    did not converge); ``dropped`` counts those, which are left out of every interval.
    """

    names: tuple[str, ...]
    intervals: dict[str, tuple[float, float] | None]
    replicates: np.ndarray
    dropped: int
    n_clusters: int
    confidence: float
    seed: int
    note: str = ""

    def coefficient_replicates(self, name: str) -> np.ndarray:
        return self.replicates[:, self.names.index(name)]


def beta_cluster_bootstrap(
    y: npt.ArrayLike,
    X: npt.ArrayLike,
    clusters: npt.ArrayLike,
    *,
    names: Sequence[str],
    start: npt.ArrayLike,
    seed: int,
    replicates: int,
    confidence: float = 0.95,
    min_clusters: int = BOOTSTRAP_SLOPE_MIN_CLUSTERS_FLOOR,
) -> BetaBootstrapResult:
    """Cluster (item) bootstrap of a beta regression's mean coefficients.

    Clusters are drawn with replacement (``bootstrap.cluster_weights`` with
    ``numpy.random.default_rng(seed)``), each replicate is refitted from ``start`` (the
    full-sample estimate) and each coefficient's interval is Hesterberg's (2015, Am. Stat.
    69(4) §4.2) expanded percentile interval for K clusters
    (``bootstrap.expanded_percentile_interval``): the plain percentile interval under-covers
    with the 10–30 items of a family (Davison & Hinkley 1997 §5.3, §3.8).

    Args:
        y, X: as in :func:`fit_beta_weighted`.
        clusters: length-n cluster labels (the item of each response).
        names: the k mean-model coefficient names, in the order of X's columns.
        start: the full-sample ``(β…, log φ)``.
        min_clusters: below this many clusters (raised to
            ``BOOTSTRAP_SLOPE_MIN_CLUSTERS_FLOOR``) no interval is formed (None, with a note).

    Raises:
        ValueError: as :func:`fit_beta_weighted`, a names/columns mismatch, fewer than one
            replicate, or missing cluster labels.
    """
    X = np.asarray(X, dtype=float)
    if len(names) != X.shape[1]:
        raise ValueError(f"{len(names)} names for {X.shape[1]} columns")
    if replicates < 1:
        raise ValueError(f"replicates must be >= 1, got {replicates}")
    labels = pd.Series(np.asarray(clusters, dtype=object))
    codes, n_clusters = cluster_codes(labels)
    empty = np.empty((0, X.shape[1] + 1))
    min_clusters = max(min_clusters, BOOTSTRAP_SLOPE_MIN_CLUSTERS_FLOOR)
    if n_clusters < min_clusters:
        return BetaBootstrapResult(
            names=tuple(names),
            intervals={name: None for name in names},
            replicates=empty,
            dropped=0,
            n_clusters=n_clusters,
            confidence=confidence,
            seed=seed,
            note=unavailable_note(n_clusters, min_clusters),
        )
    draws = cluster_weights(n_clusters, replicates, np.random.default_rng(seed))
    params, converged = fit_beta_weighted(y, X, draws[:, codes], start=start)
    intervals: dict[str, tuple[float, float] | None] = {}
    for j, name in enumerate(names):
        finite = params[:, j][np.isfinite(params[:, j])]
        intervals[name] = (
            expanded_percentile_interval(finite, confidence, n_clusters) if finite.size else None
        )
    dropped = int((~converged).sum())
    return BetaBootstrapResult(
        names=tuple(names),
        intervals=intervals,
        replicates=params,
        dropped=dropped,
        n_clusters=n_clusters,
        confidence=confidence,
        seed=seed,
        note=f"{dropped} replicates did not converge and were left out" if dropped else "",
    )
