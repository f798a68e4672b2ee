"""Krippendorff's α for inter-rater reliability, with missing ratings — the one implementation.

The raters app reports α per rubric field on the PI's dashboard; the analysis pipelines report
it in the result document (``apps.analysis.stats.reliability`` re-exports these functions). No
Django imports. The computation is the ``krippendorff`` package's (Castro, fast-krippendorff),
which implements Krippendorff (2011) "Computing Krippendorff's Alpha-Reliability" for nominal,
ordinal, interval and ratio data; OPB-01 §7 names α on F_att with a frozen minimum; the XSTest
study uses it on the annotators' labels.

The level of measurement each rubric field kind is analysed at (``LEVEL_FOR_KIND``):

| kind | level | why |
|---|---|---|
| categorical, binary | nominal | unordered categories |
| ordinal | ordinal | ordered choices, distances by rank (choices coded by their position) |
| count | ratio | a true zero; differences relative to magnitude |
| number | interval | equal distances (F_att, H per 100 words, observed rates) |
| checklist, quote | — | not a single value: α is not computed (F_att derived from the
  checklist carries its reliability) |
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any, Literal

import krippendorff
import numpy as np
import numpy.typing as npt
import pandas as pd

Level = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS = ("nominal", "ordinal", "interval", "ratio")

LEVEL_FOR_KIND: dict[str, Level] = {
    "categorical": "nominal",
    "binary": "nominal",
    "ordinal": "ordinal",
    "count": "ratio",
    "number": "interval",
}


@dataclass(frozen=True)
class AlphaResult:
    """α with the counts that say how much data it rests on.

    ``alpha`` is ``None`` when α is undefined: no unit has values from two raters, or every
    pairable value is the same (expected disagreement 0, so α = 0/0). ``note`` says which.
    """

    alpha: float | None
    level: str
    n_raters: int
    n_units: int
    n_pairable_units: int
    n_pairable_values: int
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ReliabilityMatrix:
    """Raters × units matrix (NaN = not rated) with its row and column labels.

    ``categories`` is the label order used to code non-numeric values as 0, 1, 2, …
    (``None`` when the values were numeric and kept as they are).
    """

    data: np.ndarray
    raters: tuple[Hashable, ...]
    units: tuple[Hashable, ...]
    categories: tuple[Hashable, ...] | None


def krippendorff_alpha(
    reliability_data: npt.ArrayLike,
    level: Level = "nominal",
    *,
    value_domain: Sequence[float] | None = None,
) -> AlphaResult:
    """Krippendorff's α (Krippendorff 2011) on a raters × units matrix.

    Args:
        reliability_data: 2-D array, one row per rater, one column per unit, NaN where the
            rater did not rate the unit. Values are numbers (codes for nominal/ordinal data,
            measurements for interval/ratio data, e.g. F_att in [0, 1]).
        level: "nominal", "ordinal", "interval" or "ratio" (the difference function δ²).
        value_domain: optional ordered list of all possible values (ordinal scales whose
            extreme categories were never used); defaults to the observed values.

    Returns:
        :class:`AlphaResult`. Only units with values from at least two raters are pairable;
        the others do not enter α (Krippendorff 2011, step "units with m_u ≥ 2").

    Raises:
        ValueError: not 2-D, fewer than 2 raters, non-numeric or infinite values, an unknown
            ``level``, negative values at the ratio level.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    try:
        data = np.asarray(reliability_data, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError("reliability data must be numeric (code labels first)") from exc
    if data.ndim != 2:
        raise ValueError(f"reliability data must be raters x units (2-D), got shape {data.shape}")
    if data.shape[0] < 2:
        raise ValueError(f"need at least 2 raters (rows), got {data.shape[0]}")
    if np.any(np.isinf(data)):
        raise ValueError("reliability data has infinite values")
    if level == "ratio" and np.any(data[~np.isnan(data)] < 0):
        raise ValueError("ratio-level values must be >= 0")

    rated = ~np.isnan(data)
    pairable = rated.sum(axis=0) >= 2
    values = data[:, pairable][rated[:, pairable]]
    result = partial(
        AlphaResult,
        level=level,
        n_raters=int(data.shape[0]),
        n_units=int(data.shape[1]),
        n_pairable_units=int(pairable.sum()),
        n_pairable_values=int(values.size),
    )
    if not pairable.any():
        return result(alpha=None, note="no unit was rated by two raters")
    if np.unique(values).size < 2:
        return result(
            alpha=None,
            note="all pairable values are equal: expected disagreement is 0, alpha is 0/0",
        )
    alpha = krippendorff.alpha(
        reliability_data=data, level_of_measurement=level, value_domain=value_domain
    )
    return result(alpha=float(alpha))


def reliability_matrix(
    records: pd.DataFrame,
    *,
    unit: str = "unit",
    rater: str = "rater",
    value: str = "value",
    categories: Sequence[Hashable] | None = None,
) -> ReliabilityMatrix:
    """Build the raters × units matrix from long-form (unit, rater, value) records.

    Raters and units are sorted, so the matrix does not depend on record order.

    Args:
        records: one row per score, with columns ``unit``, ``rater`` and ``value``.
        categories: for non-numeric values, the label order; label i is coded i (for ordinal
            data this order is the scale). Numeric values may omit it and are kept as they are.

    Raises:
        ValueError: missing columns, missing unit/rater/value entries (drop unscored records
            first), a rater scoring one unit twice (keep the adjudicated or latest score
            upstream), non-numeric values without ``categories``, a value not in
            ``categories``, duplicate categories.
    """
    missing = [c for c in (unit, rater, value) if c not in records.columns]
    if missing:
        raise ValueError(f"records have no column(s) {missing}")
    for column in (unit, rater, value):
        if records[column].isna().any():
            raise ValueError(f"column {column!r} has missing entries; drop unscored records first")
    duplicated = records.duplicated([unit, rater], keep=False)
    if duplicated.any():
        first = records.loc[duplicated, [unit, rater]].iloc[0].tolist()
        raise ValueError(f"rater {first[1]!r} scored unit {first[0]!r} more than once")

    values = records[value]
    if categories is not None:
        if len(set(categories)) != len(categories):
            raise ValueError(f"categories contains duplicates: {list(categories)!r}")
        codes = {label: i for i, label in enumerate(categories)}
        unknown = sorted({v for v in values if v not in codes}, key=str)
        if unknown:
            raise ValueError(f"values not in categories {list(categories)!r}: {unknown!r}")
        coded = values.map(codes).astype(float)
    elif pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        coded = values.astype(float)
    else:
        raise ValueError("values are not numeric; pass categories to code them")

    table = (
        pd.DataFrame({"unit": records[unit], "rater": records[rater], "value": coded})
        .pivot(index="rater", columns="unit", values="value")
        .sort_index(axis=0)
        .sort_index(axis=1)
    )
    return ReliabilityMatrix(
        data=table.to_numpy(float),
        raters=tuple(table.index),
        units=tuple(table.columns),
        categories=None if categories is None else tuple(categories),
    )


@dataclass(frozen=True)
class PairAgreement:
    """Agreement of two coders (a scorer and the reviewers, or two scorers) on one field.

    ``n`` units were coded by both. ``alpha`` is Krippendorff's α on the 2 × n matrix
    (``krippendorff_alpha``); ``percent_agreement`` the share of the n units with equal values;
    ``kappa`` Cohen's κ (Cohen 1960, "A coefficient of agreement for nominal scales"), computed
    by statsmodels' ``cohens_kappa`` from the k × k contingency table, for nominal fields only
    (``None`` otherwise, or when undefined: fewer than two units, or one category only).
    """

    n: int
    alpha: float | None
    percent_agreement: float | None
    kappa: float | None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def pair_agreement(
    first: Sequence[float],
    second: Sequence[float],
    level: Level,
    *,
    n_categories: int | None = None,
) -> PairAgreement:
    """Agreement of two coders over the same units (NaN where one did not code the unit).

    Args:
        first, second: equal-length sequences of values, coded as for ``krippendorff_alpha``
            (category codes 0 … k−1 for nominal and ordinal fields, numbers otherwise).
        level: the field's level of measurement (``LEVEL_FOR_KIND``).
        n_categories: k, for nominal fields: Cohen's κ is computed only when given.

    Raises:
        ValueError: the sequences differ in length, or a nominal code is outside 0 … k−1.
    """
    a = np.asarray(first, dtype=float)
    b = np.asarray(second, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("the two coders' values must be 1-D sequences of equal length")
    both = ~np.isnan(a) & ~np.isnan(b)
    n = int(both.sum())
    if n == 0:
        return PairAgreement(0, None, None, None, "no unit was coded by both")
    result = krippendorff_alpha(np.vstack([a, b]), level)
    percent = float(np.mean(a[both] == b[both]))
    kappa = None
    if level == "nominal" and n_categories is not None:
        from statsmodels.stats.inter_rater import cohens_kappa

        codes_a, codes_b = a[both].astype(int), b[both].astype(int)
        if codes_a.min() < 0 or max(codes_a.max(), codes_b.max()) >= n_categories:
            raise ValueError(f"nominal codes must lie in 0 … {n_categories - 1}")
        table = np.zeros((n_categories, n_categories))
        np.add.at(table, (codes_a, codes_b), 1)
        if n >= 2 and len(set(codes_a) | set(codes_b)) >= 2:
            value = float(cohens_kappa(table).kappa)
            kappa = value if np.isfinite(value) else None
    return PairAgreement(n, result.alpha, percent, kappa, result.note)
