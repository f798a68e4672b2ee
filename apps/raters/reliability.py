"""Krippendorff's α behind one function (until ``apps/analysis/stats/reliability.py`` is shared).

No Django imports. The level of measurement each rubric field kind is analysed at:

| kind | level | why |
|---|---|---|
| categorical, binary | nominal | unordered categories |
| ordinal | ordinal | ordered choices, distances by rank (choices coded by their position) |
| count | ratio | a true zero; differences relative to magnitude |
| number | interval | equal distances (F_att, H per 100 words, observed rates) |
| checklist, quote | — | not a single value: α is not computed (F_att derived from the
  checklist carries its reliability) |
"""

import math
from collections.abc import Sequence

import krippendorff
import numpy as np

LEVEL_FOR_KIND = {
    "categorical": "nominal",
    "binary": "nominal",
    "ordinal": "ordinal",
    "count": "ratio",
    "number": "interval",
}


def krippendorff_alpha(reliability_data: Sequence[Sequence[float]], level: str) -> float | None:
    """Krippendorff's α of a coders × units matrix (``nan`` for a missing value).

    ``level`` is nominal, ordinal, interval or ratio. Values must be numeric codes (encode
    categories first). Returns None when α is undefined: fewer than one unit with two values,
    or a single value in the whole data (no variation, so expected disagreement is 0).
    Reference: Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", §§ A–E; the
    computation is the ``krippendorff`` package's.
    """
    data = np.asarray(reliability_data, dtype=float)
    if data.ndim != 2 or data.shape[0] < 2:
        return None
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    if not pairable.any():
        return None
    values = data[:, pairable]
    if np.unique(values[~np.isnan(values)]).size < 2:
        return None
    value = float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))
    return None if math.isnan(value) else value
