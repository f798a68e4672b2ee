"""The input checks the interval functions share: a confidence level, cluster labels and
per-cluster counts. Each raises ``ValueError`` with the message the callers always gave, so a
caller's error is the same whichever module it comes from.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd


def check_confidence(confidence: float) -> None:
    """Refuse a confidence level outside the open interval (0, 1).

    Raises:
        ValueError: ``confidence`` ≤ 0 or ≥ 1 (the message names the value given).
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")


def cluster_codes(labels: pd.Series) -> tuple[np.ndarray, int]:
    """The labels' cluster codes 0..K−1 (in the labels' sorted order) and K.

    Args:
        labels: one cluster label per observation (any hashable values).

    Returns:
        ``(codes, K)``: an integer array as long as ``labels`` and the number of clusters.

    Raises:
        ValueError: a label is missing (None or NaN).
    """
    if labels.isna().any():
        raise ValueError("cluster labels are missing")
    codes, uniques = pd.factorize(labels, sort=True)
    return np.asarray(codes), len(uniques)


def cluster_counts(sums: npt.ArrayLike, sizes: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster event counts and sizes as float arrays, checked.

    Args:
        sums: length-K counts per cluster (≥ 0; may be fractional).
        sizes: length-K observations per cluster (> 0).

    Returns:
        ``(sums, sizes)`` as 1-D float arrays.

    Raises:
        ValueError: fewer than 2 clusters, unequal lengths, a size ≤ 0 or a count outside
            [0, size].
    """
    s = np.asarray(sums, dtype=float)
    m = np.asarray(sizes, dtype=float)
    if s.ndim != 1 or s.shape != m.shape or s.size < 2:
        raise ValueError("sums and sizes must be equal-length 1-D arrays of at least 2 clusters")
    if np.any(m <= 0) or np.any(s < 0) or np.any(s > m):
        raise ValueError("each cluster needs size > 0 and 0 <= count <= size")
    return s, m
