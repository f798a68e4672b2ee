import numpy as np
import pandas as pd
import pytest

from apps.analysis.stats.agreement import agreement

# Fleiss (1971) as worked on Wikipedia's "Fleiss' kappa" page: 10 subjects, 14 raters, 5
# categories; published P̄ = 0.378 and κ = 0.210.
FLEISS_TABLE = np.array(
    [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
)


def _long(table):
    rows = []
    for subject, counts in enumerate(table):
        labels = np.repeat(np.arange(1, 6), counts)
        rows += [{"unit": subject, "rater": r, "label": int(lab)} for r, lab in enumerate(labels)]
    return pd.DataFrame(rows)


def test_the_published_fleiss_example():
    result = agreement(
        _long(FLEISS_TABLE), unit="unit", rater="rater", value="label", categories=[1, 2, 3, 4, 5]
    )
    assert result.percent_agreement == pytest.approx(0.378, abs=5e-4)
    assert result.fleiss_kappa == pytest.approx(0.210, abs=5e-4)
    assert result.n_units == 10 and result.raters_per_unit == 14


def test_two_raters_percent_agreement_is_the_share_of_responses_they_agree_on():
    data = pd.DataFrame(
        {
            "unit": [1, 1, 2, 2, 3, 3, 4, 4, 5],
            "rater": ["a", "b"] * 4 + ["a"],
            "label": ["x", "x", "x", "y", "y", "y", "x", "x", "y"],
        }
    )
    result = agreement(data, unit="unit", rater="rater", value="label", categories=["x", "y"])
    assert result.percent_agreement == pytest.approx(3 / 4)
    assert result.units_left_out == 1  # unit 5 has one rating
    # Cohen-style by hand: p_x = 5/8, p_y = 3/8, P_e = 34/64, κ = (0.75 − P_e) / (1 − P_e).
    expected = (0.75 - 34 / 64) / (1 - 34 / 64)
    assert result.fleiss_kappa == pytest.approx(expected)


def test_unanimous_single_label_leaves_kappa_undefined():
    data = pd.DataFrame({"unit": [1, 1, 2, 2], "rater": ["a", "b"] * 2, "label": ["x"] * 4})
    result = agreement(data, unit="unit", rater="rater", value="label", categories=["x", "y"])
    assert result.percent_agreement == 1.0 and result.fleiss_kappa is None
