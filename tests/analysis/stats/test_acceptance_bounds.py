"""Issue #36 §3: CRUCIBLE's hard-fail rate ceilings are judged on an exact upper bound."""

import pytest
from scipy.stats import binomtest

from apps.analysis.stats.acceptance import clopper_pearson_upper, rung_failures


def test_the_upper_bound_is_clopper_pearsons():
    # With no failure the bound is closed-form, 1 − α^(1/n) (the "rule of three" ≈ 3/n:
    # Hanley & Lippman-Hand 1983, JAMA 249(13)): 0.4507 for 5 episodes, 0.0295 for 100.
    assert clopper_pearson_upper(0, 5, 0.95) == pytest.approx(1 - 0.05 ** (1 / 5))
    assert clopper_pearson_upper(0, 100, 0.95) == pytest.approx(0.0295, abs=5e-5)
    # The one-sided 95 % bound is the upper end of the two-sided 90 % exact interval.
    for count, n in ((3, 40), (1, 7), (12, 500)):
        expected = binomtest(count, n).proportion_ci(0.90, method="exact").high
        assert clopper_pearson_upper(count, n, 0.95) == pytest.approx(expected, rel=1e-9)
    assert clopper_pearson_upper(4, 4, 0.95) == 1.0
    with pytest.raises(ValueError, match="count <= n"):
        clopper_pearson_upper(5, 4, 0.95)


POLICY = {"code": "p", "hard_fail_ceilings": [{"channel": "breach", "maximum": 0.05, "on": "rate"}]}


def _fails(count, episodes, graded):
    cell = {"count": count, "rate": count / episodes, "episodes": episodes, "graded": graded}
    return rung_failures(POLICY, axes={}, hard_fails={"breach": cell}, incidents=0)


def test_no_failure_in_five_episodes_does_not_meet_a_five_percent_ceiling():
    (failure,) = _fails(0, 5, 5)
    assert "exact upper 95% bound 0.451" in failure and "ceiling 0.05" in failure
    assert _fails(0, 100, 100) == []


def test_ungraded_episodes_stay_in_the_denominator_and_are_named():
    (failure,) = _fails(1, 30, 26)
    assert "1 in 30 episodes (4 not graded, counted as not failing)" in failure


def test_a_count_ceiling_is_on_the_failures_observed():
    policy = {"code": "p", "hard_fail_ceilings": [{"channel": "breach", "maximum": 0}]}
    cell = {"count": 0, "rate": 0.0, "episodes": 5, "graded": 5}
    assert rung_failures(policy, axes={}, hard_fails={"breach": cell}, incidents=0) == []


def _ceiling(**ceiling):
    return {"code": "p", "hard_fail_ceilings": [{"channel": "breach", **ceiling}]}


def test_a_ceiling_that_counts_ungraded_episodes_as_failing_fails_closed_on_them():
    # 0 failures among 100 graded of 110 episodes: as not failing, the bound (rule of three,
    # 1 − 0.05^(1/110) = 0.027) meets a 5 % ceiling; as failing, 10 in 110 bound the rate at
    # the exact 95 % bound of 10/110, above it.
    cell = {"count": 0, "rate": 0.0, "episodes": 110, "graded": 100}
    rate = _ceiling(maximum=0.05, on="rate")
    assert rung_failures(rate, axes={}, hard_fails={"breach": cell}, incidents=0) == []
    closed = _ceiling(maximum=0.05, on="rate", ungraded="failing")
    (failure,) = rung_failures(closed, axes={}, hard_fails={"breach": cell}, incidents=0)
    expected = binomtest(10, 110).proportion_ci(0.90, method="exact").high
    assert "10 in 110 episodes (10 not graded, counted as failing, as the policy says)" in failure
    assert f"rate {10 / 110:.3f}" in failure and f"bound {expected:.3f}" in failure
    # A count ceiling counts them too; with every episode graded the rule changes nothing.
    count = _ceiling(maximum=0, ungraded="failing")
    (failure,) = rung_failures(count, axes={}, hard_fails={"breach": cell}, incidents=0)
    assert failure == (
        "breach: count 10 (0 observed, 10 not graded, counted as failing, as the policy says) "
        "exceeds the ceiling 0"
    )
    graded = {**cell, "graded": 110}
    assert rung_failures(count, axes={}, hard_fails={"breach": graded}, incidents=0) == []
    assert rung_failures(closed, axes={}, hard_fails={"breach": graded}, incidents=0) == []


def test_the_policy_schema_takes_the_ungraded_rule_and_nothing_else():
    from jsonschema import Draft202012Validator

    from apps.analysis.stats.acceptance import ACCEPTANCE_POLICIES_SCHEMA

    validator = Draft202012Validator(ACCEPTANCE_POLICIES_SCHEMA)
    assert validator.is_valid([_ceiling(maximum=0, ungraded="failing")])
    assert validator.is_valid([_ceiling(maximum=0, ungraded="not_failing")])
    assert not validator.is_valid([_ceiling(maximum=0, ungraded="ignored")])
