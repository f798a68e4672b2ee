"""Judge validation: a machine scorer's values against the human audit (issue 34 §5, §6).

Pure functions over coded values (no Django). One comparison sets a machine scorer's values
against a human reference on the same responses — the reviewers' final values, or one
reviewer's own — and gives:

- the **confusion matrix** (rows: the human reference; columns: the machine; scikit-learn's
  ``confusion_matrix(y_true=human, y_pred=machine)`` orientation) and per-class **precision,
  recall and F1** (van Rijsbergen 1979, *Information Retrieval*, ch. 7; precision of class c =
  C[c, c] / Σᵢ C[i, c], recall = C[c, c] / Σⱼ C[c, j], F1 their harmonic mean), for fields with
  categories (binary, categorical, ordinal);
- **percent agreement**, **Cohen's κ** (Cohen 1960, "A coefficient of agreement for nominal
  scales", Educ. Psychol. Meas. 20(1): 37–46: κ = (p_o − p_e) / (1 − p_e), p_e from the two
  margins) for fields with categories, and **Krippendorff's α** at the field's level of
  measurement (Krippendorff 2011, computed by the ``krippendorff`` package through
  ``apps.analysis.stats.reliability.krippendorff_alpha``);
- **intervals** for α and κ by the **cluster bootstrap**, resampling items with replacement
  and taking every audited response of a drawn item along (Field, C. A. & Welsh, A. H. 2007,
  "Bootstrapping clustered data", J. R. Stat. Soc. B 69(3): 369–390, the "cluster bootstrap";
  Davison & Hinkley 1997 §3.8): several responses to one item share its difficulty, so
  resampling responses would understate the uncertainty. The interval is Hesterberg's expanded
  percentile interval of the replicates (Hesterberg 2015, Am. Stat. 69(4) §4.2; the percentile
  interval of Efron & Tibshirani 1993 §13.3 widened for K clusters,
  ``bootstrap.expanded_percentile_interval``), whose coverage the calibration suite checks
  (tests/calibration/, ``designs.judge_coverage``). Below ``bootstrap.MIN_CLUSTERS_FLOOR``
  items no interval is given, with the reason.

**Weights (stratified audits).** When the audit sample was drawn with unequal probabilities
(stratified by the machine's value, its confidence or the condition, with the fractions frozen
in the plan), each audited response carries the weight 1/πᵢ, its inverse inclusion
probability (Horvitz, D. G. & Thompson, D. J. 1952, "A generalization of sampling without
replacement from a finite universe", JASA 47(260): 663–685). The confusion matrix is then the
Horvitz–Thompson estimate of the population's (each response counts wᵢ), and percent
agreement, precision, recall, F1 and κ are computed from it: ratio (Hájek) estimators of the
population's figures, consistent where the unweighted sample figures are biased towards the
oversampled strata. α is computed by the ``krippendorff`` package, which takes no weights: it
describes the audited responses as sampled (``alpha_weighted: false`` says so). The bootstrap
resamples items with their responses' weights.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from apps.analysis.stats.bootstrap import (
    MIN_CLUSTERS_FLOOR,
    cluster_weights,
    expanded_percentile_interval,
)
from apps.analysis.stats.reliability import Level, krippendorff_alpha

# The bootstrap's replicates: fewer than the studies' own default (bootstrap.DEFAULT_REPLICATES)
# because the scoring dashboard draws it on request; the fewest items an interval is given from
# is the cluster floor the calibration suite checks for every cluster bootstrap
# (bootstrap.MIN_CLUSTERS_FLOOR).
DEFAULT_REPLICATES = 999


@dataclass(frozen=True)
class Bootstrap:
    """The cluster bootstrap's settings: ``replicates`` draws of the items, intervals at
    ``confidence``, numpy's ``default_rng(seed)``."""

    replicates: int = DEFAULT_REPLICATES
    confidence: float = 0.95
    seed: int = 0


def confusion(
    human: npt.ArrayLike,
    machine: npt.ArrayLike,
    n_categories: int,
    weights: npt.ArrayLike | None = None,
) -> np.ndarray:
    """The k × k confusion matrix: entry [i, j] = Σ weights of the responses the humans coded i
    and the machine coded j (counts when ``weights`` is None).

    Args:
        human, machine: equal-length integer codes 0 … k−1 (1-D).
        n_categories: k.
        weights: optional non-negative weight per response (inverse inclusion probabilities).

    Raises:
        ValueError: unequal lengths, codes outside 0 … k−1, negative or non-finite weights.
    """
    h = np.asarray(human, dtype=float)
    m = np.asarray(machine, dtype=float)
    if h.shape != m.shape or h.ndim != 1:
        raise ValueError("human and machine codes must be 1-D sequences of equal length")
    w = np.ones_like(h) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != h.shape:
        raise ValueError("weights must have one entry per response")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weights must be finite and non-negative")
    for codes in (h, m):
        if codes.size and (codes.min() < 0 or codes.max() >= n_categories or np.any(codes % 1)):
            raise ValueError(f"codes must be integers in 0 … {n_categories - 1}")
    table = np.zeros((n_categories, n_categories))
    np.add.at(table, (h.astype(int), m.astype(int)), w)
    return table


def _ratio(top: float, bottom: float) -> float | None:
    return float(top / bottom) if bottom > 0 else None


def per_class(table: np.ndarray, labels: Sequence[str]) -> list[dict[str, Any]]:
    """Per class of a confusion ``table`` (rows human, columns machine): ``{"label",
    "precision", "recall", "f1", "support"}``; a ratio with a zero denominator is None
    (scikit-learn's ``zero_division=np.nan``). ``support`` is the row total (the humans' count
    of the class, weighted when the table is)."""
    out = []
    for i, label in enumerate(labels):
        hit = float(table[i, i])
        precision = _ratio(hit, float(table[:, i].sum()))
        recall = _ratio(hit, float(table[i, :].sum()))
        f1 = (
            None
            if precision is None or recall is None or precision + recall == 0
            else 2 * precision * recall / (precision + recall)
        )
        out.append(
            {
                "label": label,
                "precision": precision,
                "recall": recall,
                "f1": f1,
                "support": float(table[i, :].sum()),
            }
        )
    return out


def kappa_of_tables(tables: np.ndarray) -> np.ndarray:
    """Cohen's κ of each k × k table in ``tables`` (shape (..., k, k)), NaN where undefined
    (p_e = 1: both coders used one and the same category). κ = (p_o − p_e) / (1 − p_e), with
    p_o the diagonal's share and p_e Σ_c (row share_c × column share_c) (Cohen 1960)."""
    total = tables.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = tables / total[..., None, None]
        observed = np.trace(p, axis1=-2, axis2=-1)
        expected = np.sum(p.sum(axis=-1) * p.sum(axis=-2), axis=-1)
        kappa = (observed - expected) / (1.0 - expected)
    return np.where(np.isclose(expected, 1.0) | (total <= 0), np.nan, kappa)


def nominal_alpha_of_tables(tables: np.ndarray) -> np.ndarray:
    """Krippendorff's α (nominal) of two coders from each k × k table of their joint codes
    (shape (..., k, k); every unit coded by both), NaN where undefined. The coincidence matrix
    is o = T + Tᵀ (each unit's two pairable values, Krippendorff 2011 §"coincidences"), n_c its
    margins, n = Σ n_c, and α = 1 − (n − 1) Σ_{c≠k} o_ck / Σ_{c≠k} n_c n_k. Equal to the
    ``krippendorff`` package on the same data (tests/analysis/stats/test_judge.py); used for the
    bootstrap replicates only, where calling the package once per replicate is too slow."""
    coincidences = tables + np.swapaxes(tables, -1, -2)
    margins = coincidences.sum(axis=-1)
    n = margins.sum(axis=-1)
    observed = n - np.trace(coincidences, axis1=-2, axis2=-1)
    expected = n**2 - np.sum(margins**2, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = 1.0 - (n - 1) * observed / expected
    return np.where(expected > 0, alpha, np.nan)


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def compare(
    human: npt.ArrayLike,
    machine: npt.ArrayLike,
    clusters: Sequence[Hashable],
    *,
    level: Level,
    n_categories: int | None,
    weights: npt.ArrayLike | None = None,
    bootstrap: Bootstrap | None = None,
) -> dict[str, Any]:
    """Agreement of a machine scorer with a human reference over the responses both coded.

    Args:
        human, machine: equal-length 1-D codes (category codes 0 … k−1 for fields with
            categories, numbers otherwise), NaN where that coder gave no value.
        clusters: the item of each response (the bootstrap's resampling unit).
        level: the field's level of measurement (α's difference function).
        n_categories: k for fields with categories (κ and the confusion matrix), else None.
        weights: inverse inclusion probabilities of a stratified audit, or None (all 1).
        bootstrap: the settings of the intervals for α and κ; None: no intervals.

    Returns:
        ``{"n", "clusters", "weighted", "percent_agreement", "kappa", "kappa_interval",
        "alpha", "alpha_interval", "alpha_weighted", "note"}``; intervals are ``[low, high]``
        or None (``note`` says why).

    Raises:
        ValueError: unequal lengths, codes outside 0 … k−1, bad weights.
    """
    h = np.asarray(human, dtype=float)
    m = np.asarray(machine, dtype=float)
    if h.shape != m.shape or h.ndim != 1 or len(clusters) != h.size:
        raise ValueError("human, machine and clusters must have one entry per response")
    w_all = np.ones_like(h) if weights is None else np.asarray(weights, dtype=float)
    both = ~np.isnan(h) & ~np.isnan(m)
    h, m, w = h[both], m[both], w_all[both]
    cluster_of = [c for c, keep in zip(clusters, both, strict=True) if keep]
    names = sorted(set(cluster_of), key=str)
    index = {c: i for i, c in enumerate(names)}
    codes = np.array([index[c] for c in cluster_of], dtype=int)
    out: dict[str, Any] = {
        "n": int(h.size),
        "clusters": len(names),
        "weighted": weights is not None,
        "percent_agreement": None,
        "kappa": None,
        "kappa_interval": None,
        "alpha": None,
        "alpha_interval": None,
        "alpha_weighted": False,
        "note": "",
    }
    if h.size == 0:
        out["note"] = "no response was coded by both"
        return out
    out["percent_agreement"] = float(np.sum(w * (h == m)) / np.sum(w))
    alpha = krippendorff_alpha(np.vstack([h, m]), level)
    out["alpha"], out["note"] = alpha.alpha, alpha.note
    tables = counts = None
    if n_categories is not None:
        # Per item, its responses' weighted table (and for α, unweighted counts): a
        # replicate's table is then the draw counts times these (one matrix product for every
        # replicate at once).
        tables = np.zeros((len(names), n_categories, n_categories))
        np.add.at(tables, (codes, h.astype(int), m.astype(int)), w)
        counts = np.zeros_like(tables)
        np.add.at(counts, (codes, h.astype(int), m.astype(int)), 1.0)
        out["kappa"] = _finite(float(kappa_of_tables(tables.sum(axis=0))))
    if bootstrap is None:
        return out
    if len(names) < MIN_CLUSTERS_FLOOR:
        out["note"] = (
            f"intervals unavailable: {len(names)} items, fewer than {MIN_CLUSTERS_FLOOR} (the "
            "cluster bootstrap's calibrated floor; docs/machine-scores.md)"
        )
        return out
    replicates, confidence = bootstrap.replicates, bootstrap.confidence
    draws = cluster_weights(len(names), replicates, np.random.default_rng(bootstrap.seed))
    if tables is not None and out["kappa"] is not None:
        k = tables.shape[-1]
        replicate_tables = (draws @ tables.reshape(len(names), -1)).reshape(replicates, k, k)
        kappas = kappa_of_tables(replicate_tables)
        if np.isfinite(kappas).any():
            out["kappa_interval"] = list(
                expanded_percentile_interval(kappas, confidence, len(names))
            )
    if out["alpha"] is not None and level == "nominal" and counts is not None:
        k = counts.shape[-1]
        alphas = nominal_alpha_of_tables(
            (draws @ counts.reshape(len(names), -1)).reshape(replicates, k, k)
        )
        if np.isfinite(alphas).any():
            out["alpha_interval"] = list(
                expanded_percentile_interval(alphas, confidence, len(names))
            )
    elif out["alpha"] is not None:
        members = [np.flatnonzero(codes == i) for i in range(len(names))]
        alphas = np.full(replicates, np.nan)
        pair = np.vstack([h, m])
        for b in range(replicates):
            chosen = np.concatenate([np.repeat(members[i], k) for i, k in enumerate(draws[b]) if k])
            value = krippendorff_alpha(pair[:, chosen], level).alpha
            alphas[b] = np.nan if value is None else value
        if np.isfinite(alphas).any():
            out["alpha_interval"] = list(
                expanded_percentile_interval(alphas, confidence, len(names))
            )
    return out


def judge_validation(
    *,
    machine: Mapping[str, float],
    final: Mapping[str, float],
    reviewers: Mapping[str, Mapping[str, float]],
    clusters: Mapping[str, Hashable],
    level: Level,
    labels: Sequence[str] | None,
    weights: Mapping[str, float] | None = None,
    bootstrap: Bootstrap | None = None,
) -> dict[str, Any]:
    """One machine scorer on one field against the human audit.

    Args:
        machine: response key → the scorer's coded value.
        final: response key → the reviewers' final coded value (agreed or adjudicated).
        reviewers: reviewer → {response key → that reviewer's own coded value}.
        clusters: response key → its item (every key above must have one).
        level: the field's level of measurement.
        labels: the category labels (codes are their positions) for fields with categories,
            else None (then no confusion matrix, per-class figures or κ).
        weights: response key → 1/πᵢ for a stratified audit (responses without a weight are
            left out), or None.
        bootstrap: the cluster bootstrap's settings (default ``Bootstrap()``).

    Returns:
        ``{"n", "weighted", "confusion": {"labels", "rows": [{"reviewers": label, "counts":
        [...], "weighted"?: [...]}]} | None, "classes": [...], "final": compare(...),
        "reviewers": [{"reviewer", **compare(...)}]}``: confusion row i is the responses the
        reviewers' final value puts in class i, by the machine's class (columns in ``labels``'
        order); per-class figures and the final comparison are weighted when ``weights`` is
        given (``counts`` stays the plain count of responses, ``weighted`` the HT estimate).
        The intervals are the final comparison's; each reviewer's comparison gives point
        estimates.

    Raises:
        KeyError: a response key with no cluster. ValueError: as ``compare``.
    """
    units = sorted(k for k in final if k in machine and (weights is None or k in weights))
    human = np.array([final[k] for k in units], dtype=float)
    judged = np.array([machine[k] for k in units], dtype=float)
    w = None if weights is None else np.array([weights[k] for k in units], dtype=float)
    n_categories = None if labels is None else len(labels)
    result: dict[str, Any] = {"n": len(units), "weighted": weights is not None}
    result["confusion"], result["classes"] = None, []
    if labels is not None and units:
        counts = confusion(human, judged, len(labels))
        table = counts if w is None else confusion(human, judged, len(labels), w)
        result["confusion"] = {
            "labels": list(labels),
            "rows": [
                {
                    "reviewers": label,
                    "counts": counts[i].astype(int).tolist(),
                    **({} if w is None else {"weighted": table[i].round(6).tolist()}),
                }
                for i, label in enumerate(labels)
            ],
        }
        result["classes"] = per_class(table, labels)
    result["final"] = compare(
        human,
        judged,
        [clusters[k] for k in units],
        level=level,
        n_categories=n_categories,
        weights=w,
        bootstrap=bootstrap or Bootstrap(),
    )
    result["reviewers"] = []
    for reviewer, values in sorted(reviewers.items()):
        keys = sorted(k for k in values if k in machine and (weights is None or k in weights))
        result["reviewers"].append(
            {
                "reviewer": reviewer,
                **compare(
                    np.array([values[k] for k in keys], dtype=float),
                    np.array([machine[k] for k in keys], dtype=float),
                    [clusters[k] for k in keys],
                    level=level,
                    n_categories=n_categories,
                    weights=None if weights is None else [weights[k] for k in keys],
                ),
            }
        )
    return result
