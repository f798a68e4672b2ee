"""Percent agreement and Fleiss' κ between reviewers: the figures people compare α with.

XSTest (Röttger et al., NAACL 2024, §3 "annotation") reports its annotators' agreement as
percent agreement and Fleiss' κ; these are reported beside Krippendorff's α (``reliability``),
never instead of it.

- Percent agreement is Fleiss' (1971) P̄: the mean over units of the share of agreeing rater
  pairs, P_i = Σ_j n_ij (n_ij − 1) / (n (n − 1)); with two raters, the share of responses on
  which both gave the same label.
- Fleiss' κ = (P̄ − P̄_e) / (1 − P̄_e), P̄_e = Σ_j p_j² (Fleiss, J. L. 1971, "Measuring nominal
  scale agreement among many raters", Psychol. Bull. 76(5): 378–382), computed by statsmodels'
  ``fleiss_kappa``. It needs the same number of ratings per unit: units rated by the most
  common number of reviewers are used, and how many were left out is reported.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from statsmodels.stats.inter_rater import fleiss_kappa


@dataclass(frozen=True)
class Agreement:
    """Percent agreement (P̄, a proportion) and Fleiss' κ over ``n_units`` units."""

    percent_agreement: float | None
    fleiss_kappa: float | None
    n_units: int
    raters_per_unit: int | None
    units_left_out: int
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def agreement(
    data: pd.DataFrame,
    *,
    unit: str,
    rater: str,
    value: str,
    categories: Sequence[Hashable],
) -> Agreement:
    """Percent agreement and Fleiss' κ of nominal ratings.

    Both as Fleiss, J. L. 1971, "Measuring nominal scale agreement among many raters",
    Psychol. Bull. 76(5): 378–382 (P̄ and κ; κ by statsmodels' ``fleiss_kappa``); see the module
    docstring.

    Args:
        data: one row per rating, long format.
        unit, rater, value: columns holding the rated unit (response), the rater and the label.
        categories: the complete label set (a label nobody used still counts in P̄_e as 0).

    Returns:
        :class:`Agreement`; both figures are None when no unit has two or more ratings, and
        κ is None when every rating is the same label (P̄_e = 1, κ undefined).

    Raises:
        ValueError: missing columns, missing values, or a label outside ``categories``.
    """
    missing = [c for c in (unit, rater, value) if c not in data.columns]
    if missing:
        raise ValueError(f"data has no column(s) {missing}")
    if data[[unit, rater, value]].isna().any().any():
        raise ValueError("ratings have missing values; leave those rows out first")
    unknown = sorted(set(data[value]) - set(categories), key=str)
    if unknown:
        raise ValueError(f"labels not in the label set {list(categories)!r}: {unknown!r}")
    counts = (
        pd.crosstab(data[unit], data[value])
        .reindex(columns=list(categories), fill_value=0)
        .to_numpy(dtype=float)
    )
    per_unit = counts.sum(axis=1)
    rated = per_unit >= 2
    if not rated.any():
        return Agreement(None, None, 0, None, int(per_unit.size), "no unit has two ratings")
    values, frequency = np.unique(per_unit[rated], return_counts=True)
    m = int(values[np.argmax(frequency)])
    table = counts[per_unit == m]
    pairs = np.sum(table * (table - 1), axis=1) / (m * (m - 1))
    shares = table.sum(axis=0) / table.sum()
    expected = float(np.sum(shares**2))
    kappa = None if expected >= 1.0 else float(fleiss_kappa(table, method="fleiss"))
    return Agreement(
        percent_agreement=float(pairs.mean()),
        fleiss_kappa=kappa,
        n_units=int(table.shape[0]),
        raters_per_unit=m,
        units_left_out=int(per_unit.size - table.shape[0]),
        note="" if kappa is not None else "every rating is the same label: κ is undefined",
    )
