"""The report filters every pipeline's page goes through: numbers, missing values, labels."""

from apps.analysis.templatetags.analysis_format import ci, human, num, pct, pct_ci


def test_a_value_that_rounds_to_zero_is_never_signed_and_a_tiny_one_keeps_its_digits():
    assert num(-0.0) == "0.000"
    assert num(-0.0004) == "-0.0004"  # 3 decimals would print -0.000
    assert num(-2.1e-05) == "-2.1e-05"
    assert num(0.00049, 3) == "0.00049"
    assert num(-0.0005, 3) != "-0.000"
    assert num(1.23456) == "1.235"
    assert pct(-0.00001) == "-0.001 %"
    assert pct_ci([-0.0, 0.5]) == "[0.0, 50.0] %"


def test_a_missing_value_is_a_dash_that_says_why():
    for rendered in (num(None), num(float("nan")), ci(None), pct(None)):
        assert 'class="missing"' in rendered and 'title="No value' in rendered and "—" in rendered
    assert 'class="missing"' in ci([None, 0.2])
    # Neither a value that is not a number nor NaN breaks a report page or prints "nan".
    for rendered in (pct("n/a"), pct(float("nan")), pct_ci([None, 0.2]), pct_ci("x")):
        assert 'class="missing"' in rendered and "nan" not in rendered


def test_raw_labels_read_as_words():
    assert human("1_full_compliance") == "full compliance"
    assert human("scope_reduction") == "scope reduction"
    assert human("Family B") == "Family B"
    assert human(3) == 3
