"""Rates of categorical labels per group with an item-clustered percentile bootstrap.

For example XSTest's final labels (full compliance / full refusal / partial refusal) per model,
with items (prompts) as the resampling cluster (bootstrap.py).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from apps.analysis.stats.bootstrap import (
    DEFAULT_MIN_CLUSTERS,
    DEFAULT_REPLICATES,
    cluster_weights,
    percentile_interval,
    replicate_means,
)

ALL_ROWS = "all"


@dataclass(frozen=True)
class LabelRate:
    group: Hashable
    label: Hashable
    count: int
    n: int
    rate: float
    interval: tuple[float, float] | None
    n_clusters: int


@dataclass(frozen=True)
class LabelRates:
    """Per-group label rates; ``interval`` is None where fewer than ``min_clusters`` items."""

    rates: tuple[LabelRate, ...]
    labels: tuple[Hashable, ...]
    confidence: float
    replicates: int
    seed: int
    min_clusters: int

    def to_dict(self) -> dict:
        out = asdict(self)
        for row in out["rates"]:
            row["interval"] = list(row["interval"]) if row["interval"] is not None else None
        out["labels"] = list(self.labels)
        return out

    def rate(self, group: Hashable, label: Hashable) -> LabelRate:
        for row in self.rates:
            if row.group == group and row.label == label:
                return row
        raise ValueError(f"no rate for group {group!r} and label {label!r}")


def label_rates(
    data: pd.DataFrame,
    *,
    label: str,
    cluster: str,
    labels: Sequence[Hashable],
    seed: int,
    group: str | None = None,
    replicates: int = DEFAULT_REPLICATES,
    confidence: float = 0.95,
    min_clusters: int = DEFAULT_MIN_CLUSTERS,
) -> LabelRates:
    """Rate of each label per group, with an item-clustered percentile bootstrap interval.

    The rate is count / n over all rows of the group (the full-sample rate of CRUCIBLE §6.2,
    i.e. ``aggregation="observation"`` in bootstrap.py). Within a group one matrix of item
    draws serves every label, so in each replicate the label rates still sum to 1. Groups are
    processed in sorted order from one generator seeded with ``seed``.

    Args:
        data: one row per scored response.
        label: column holding the categorical label (e.g. ``"final_label"``).
        cluster: column holding the resampling cluster (e.g. the item / prompt id).
        labels: the complete label set of the rubric; a label never observed gets rate 0.
        seed: seed for ``numpy.random.default_rng``.
        group: column to split by (e.g. the evaluand); ``None`` reports one group ``"all"``.
        replicates, confidence, min_clusters: as in ``family_cluster_bootstrap``.

    Raises:
        ValueError: missing columns, an empty frame, a missing label or cluster value, a label
            outside ``labels``, duplicate entries in ``labels``.
    """
    columns = [label, cluster] + ([group] if group is not None else [])
    missing = [c for c in columns if c not in data.columns]
    if missing:
        raise ValueError(f"data has no column(s) {missing}")
    if data.empty:
        raise ValueError("data has no rows")
    if len(set(labels)) != len(labels):
        raise ValueError(f"labels contains duplicates: {list(labels)!r}")
    for column in columns:
        if data[column].isna().any():
            raise ValueError(f"column {column!r} has missing values; exclude those rows first")
    unknown = sorted(set(data[label]) - set(labels), key=str)
    if unknown:
        raise ValueError(f"labels not in the label set {list(labels)!r}: {unknown!r}")

    rng = np.random.default_rng(seed)
    groups = [(ALL_ROWS, data)] if group is None else list(data.groupby(group, sort=True))
    rows: list[LabelRate] = []
    for group_key, frame in groups:
        codes, items = pd.factorize(frame[cluster], sort=True)
        indicators = np.column_stack([(frame[label] == lab).to_numpy(float) for lab in labels])
        sums = np.zeros((len(items), len(labels)))
        np.add.at(sums, codes, indicators)
        sizes = np.bincount(codes, minlength=len(items)).astype(float)
        counts = sums.sum(axis=0)
        n = len(frame)
        intervals: list[tuple[float, float] | None] = [None] * len(labels)
        if len(items) >= min_clusters:
            weights = cluster_weights(len(items), replicates, rng)
            reps = replicate_means(weights, sums, sizes, "observation")
            intervals = [percentile_interval(reps[:, j], confidence) for j in range(len(labels))]
        for j, lab in enumerate(labels):
            rows.append(
                LabelRate(
                    group=group_key,
                    label=lab,
                    count=int(counts[j]),
                    n=n,
                    rate=float(counts[j] / n),
                    interval=intervals[j],
                    n_clusters=len(items),
                )
            )
    return LabelRates(
        rates=tuple(rows),
        labels=tuple(labels),
        confidence=confidence,
        replicates=replicates,
        seed=seed,
        min_clusters=min_clusters,
    )
