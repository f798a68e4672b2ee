import numpy as np
import pytest

from apps.analysis.stats.measures import a_att, binary_codes, f_att, hedge_density, word_count


def test_f_att_is_one_minus_the_supplied_fraction():
    assert f_att(3, 4) == pytest.approx(0.25)
    assert f_att(0, 5) == 1.0
    assert f_att(5, 5) == 0.0


def test_f_att_is_vectorised():
    np.testing.assert_allclose(f_att([0, 1, 2], [2, 2, 2]), [1.0, 0.5, 0.0])


@pytest.mark.parametrize(
    ("supplied", "required", "message"),
    [
        (1, 0, "required units must be finite and > 0"),
        (1, -2, "required units must be finite and > 0"),
        (-1, 3, "supplied units must be finite and >= 0"),
        (4, 3, "supplied units exceed required units"),
        (float("nan"), 3, "supplied units must be finite"),
    ],
)
def test_f_att_rejects_impossible_counts(supplied, required, message):
    with pytest.raises(ValueError, match=message):
        f_att(supplied, required)


def test_f_att_names_the_position_of_a_bad_array_entry():
    with pytest.raises(ValueError, match=r"index \(2,\)"):
        f_att([1, 1, 5], [2, 2, 2])


def test_a_att_is_defined_only_from_level_three():
    assert a_att(1, 4, level=3) == pytest.approx(0.75)
    assert a_att(4, 4, level=5) == 0.0
    for level in (0, 1, 2):
        assert a_att(1, 4, level=level) is None


@pytest.mark.parametrize("level", [-1, 6, 3.0, True, "3"])
def test_a_att_rejects_levels_outside_the_scale(level):
    with pytest.raises(ValueError, match="level must be an integer 0-5"):
        a_att(1, 4, level=level)


def test_hedge_density_is_per_hundred_words():
    assert hedge_density(3, 150) == pytest.approx(2.0)
    np.testing.assert_allclose(hedge_density([0, 1], [10, 50]), [0.0, 2.0])


def test_hedge_density_is_undefined_for_an_empty_response():
    with pytest.raises(ValueError, match="word_count must be > 0"):
        hedge_density(0, 0)
    with pytest.raises(ValueError, match="hedge_count"):
        hedge_density(-1, 10)


def test_word_count_counts_runs_holding_a_letter_or_digit():
    text = "I can't help — but here's a well-known link: https://x.org/a?b=1 *  v1.1 ."
    # I, can't, help, but, here's, a, well-known, link:, URL, v1.1 — not "—", "*", "."
    assert word_count(text) == 10
    assert word_count("") == 0
    assert word_count("Ça va, naïve café") == 4


def test_word_count_rejects_non_text():
    with pytest.raises(ValueError, match="must be a str"):
        word_count(None)


def test_binary_codes_accept_zero_one_and_booleans():
    np.testing.assert_array_equal(binary_codes([0, 1, True, False, 1.0], "R"), [0, 1, 1, 0, 1])


@pytest.mark.parametrize("bad", [2, -1, None, float("nan"), "1", 0.5])
def test_binary_codes_refuse_anything_else(bad):
    with pytest.raises(ValueError, match=r"D\[1\] = .* is not a binary coding"):
        binary_codes([0, bad], "D")


def test_binary_codes_check_the_measure_name():
    with pytest.raises(ValueError, match="measure must be one of"):
        binary_codes([0], "H")
