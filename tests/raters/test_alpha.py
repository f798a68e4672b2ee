"""Krippendorff's alpha against Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability"
(Annenberg School for Communication, departmental paper 43), section C: 4 observers x 12 units
with missing data. Published: nominal 0.743, ordinal 0.815, interval 0.849, ratio 0.797.

The same data and the ordinal and ratio values are in the krippendorff package's own tests
(pln-fing-udelar/fast-krippendorff tests/test_krippendorff.py); its issue #4 shows the paper's
table. The paper prints three decimals, so the tolerance is 5e-4.
"""

import numpy as np
import pandas as pd
import pytest

from apps.raters.reliability import krippendorff_alpha, reliability_matrix

NAN = np.nan
KRIPPENDORFF_2011_C = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
)


@pytest.mark.parametrize(
    ("level", "published"),
    [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)],
)
def test_alpha_matches_krippendorff_2011(level, published):
    result = krippendorff_alpha(KRIPPENDORFF_2011_C, level)
    assert result.alpha == pytest.approx(published, abs=5e-4)
    # Unit 12 has one value only, so 11 units and 40 values are pairable (paper: n = 40).
    assert (result.n_units, result.n_pairable_units, result.n_pairable_values) == (12, 11, 40)


def test_alpha_matches_the_wikipedia_three_coder_example():
    # Wikipedia, "Krippendorff's alpha", section "A computational example": nominal 0.691.
    data = np.array(
        [
            [NAN, NAN, NAN, NAN, NAN, 3, 4, 1, 2, 1, 1, 3, 3, NAN, 3],
            [1, NAN, 2, 1, 3, 3, 4, 3, NAN, NAN, NAN, NAN, NAN, NAN, NAN],
            [NAN, NAN, 2, 1, 3, 4, 4, NAN, 2, 1, 1, 3, 3, NAN, 4],
        ]
    )
    assert krippendorff_alpha(data).alpha == pytest.approx(0.691, abs=5e-4)


def test_alpha_is_none_when_no_unit_was_rated_twice():
    result = krippendorff_alpha([[1, NAN, 2], [NAN, 3, NAN]])
    assert result.alpha is None
    assert "no unit was rated by two raters" in result.note


def test_alpha_is_none_when_every_pairable_value_is_equal():
    result = krippendorff_alpha([[2, 2, 2, 5], [2, 2, 2, NAN]])
    assert result.alpha is None
    assert "expected disagreement is 0" in result.note


@pytest.mark.parametrize(
    ("data", "level", "message"),
    [
        ([[1, 2, 3]], "nominal", "at least 2 raters"),
        ([1, 2, 3], "nominal", "2-D"),
        ([[1, 2], [1, 2]], "circular", "level must be one of"),
        ([[1, -2], [1, 2]], "ratio", ">= 0"),
        ([["a", "b"], ["a", "b"]], "nominal", "must be numeric"),
    ],
)
def test_bad_input_raises_a_clear_error(data, level, message):
    with pytest.raises(ValueError, match=message):
        krippendorff_alpha(data, level)


def _long_form(matrix):
    rows = [
        {"unit": f"u{j:02d}", "rater": f"r{i}", "value": matrix[i, j]}
        for i in range(matrix.shape[0])
        for j in range(matrix.shape[1])
        if not np.isnan(matrix[i, j])
    ]
    return pd.DataFrame(rows)


def test_reliability_matrix_from_long_form_records_gives_the_same_alpha():
    records = _long_form(KRIPPENDORFF_2011_C).sample(frac=1.0, random_state=0)
    built = reliability_matrix(records)
    assert built.raters == ("r0", "r1", "r2", "r3")
    assert built.units[:2] == ("u00", "u01")
    np.testing.assert_array_equal(built.data, KRIPPENDORFF_2011_C)
    assert krippendorff_alpha(built.data, "interval").alpha == pytest.approx(0.849, abs=5e-4)


def test_reliability_matrix_codes_labels_in_the_given_order():
    records = pd.DataFrame(
        {
            "unit": ["p1", "p1", "p2", "p2"],
            "rater": ["ann1", "ann2", "ann1", "ann2"],
            "value": ["2_full_refusal", "2_full_refusal", "1_full_compliance", "3_partial_refusal"],
        }
    )
    labels = ("1_full_compliance", "2_full_refusal", "3_partial_refusal")
    built = reliability_matrix(records, categories=labels)
    np.testing.assert_array_equal(built.data, [[1.0, 0.0], [1.0, 2.0]])
    assert built.categories == labels


def test_reliability_matrix_refuses_a_second_score_by_the_same_rater():
    records = pd.DataFrame({"unit": ["a", "a"], "rater": ["r1", "r1"], "value": [1, 2]})
    with pytest.raises(ValueError, match="rater 'r1' scored unit 'a' more than once"):
        reliability_matrix(records)


def test_reliability_matrix_needs_categories_for_labels():
    records = pd.DataFrame({"unit": ["a"], "rater": ["r1"], "value": ["yes"]})
    with pytest.raises(ValueError, match="pass categories"):
        reliability_matrix(records)
    with pytest.raises(ValueError, match="values not in categories"):
        reliability_matrix(records, categories=["no"])
