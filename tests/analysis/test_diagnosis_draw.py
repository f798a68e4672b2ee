"""``Draw.from_interval``, how the kinds' worlds read an estimate and its interval, and the
worlds' design sizes (items per group): pure, no database."""

from apps.analysis.diagnosis.diagnosands import Draw


def test_an_interval_that_excludes_the_null_on_either_side_is_significant():
    above = Draw.from_interval("d", 0.3, [0.1, 0.5], estimand=0.25, above=0.0, below=0.0)
    below = Draw.from_interval("d", -0.3, [-0.5, -0.1], estimand=-0.25, above=0.0, below=0.0)
    across = Draw.from_interval("d", 0.1, [-0.1, 0.3], estimand=0.0, above=0.0, below=0.0)
    assert above == Draw("d", 0.3, estimand=0.25, low=0.1, high=0.5, significant=True)
    assert below.significant is True
    assert across.significant is False


def test_a_one_sided_test_reads_only_its_own_bound():
    # A rate found above its target only when the lower bound exceeds it; a drift rate found
    # below its ceiling only when the upper bound is below it.
    assert Draw.from_interval("r", 0.9, [0.6, 0.95], estimand=0.9, above=0.5).significant is True
    assert Draw.from_interval("r", 0.9, [0.4, 0.95], estimand=0.9, above=0.5).significant is False
    assert Draw.from_interval("r", 0.05, [0.01, 0.08], estimand=0.05, below=0.1).significant is True
    assert Draw.from_interval("r", 0.05, [0.01, 0.2], estimand=0.05, below=0.1).significant is False


def test_without_an_interval_the_test_is_undecided_and_the_bounds_are_none():
    draw = Draw.from_interval("d", None, None, estimand=0.2, above=0.0, below=0.0)
    assert draw == Draw("d", None, estimand=0.2, low=None, high=None, significant=None)


def test_without_a_null_the_draw_carries_the_results_own_test():
    assert Draw.from_interval("d", 0.2, [0.1, 0.3], estimand=0.2).significant is None
    given = Draw.from_interval("d", 0.2, None, estimand=0.2, significant=True)
    assert (given.low, given.high, given.significant) == (None, None, True)


def test_the_bounds_are_plain_floats():
    draw = Draw.from_interval("d", 1, (0, 2), estimand=1.0)
    assert (draw.low, draw.high) == (0.0, 2.0)
    assert all(type(bound) is float for bound in (draw.low, draw.high))


def test_items_per_family_and_per_condition_count_the_largest_group():
    from apps.analysis.diagnosis.world import items_per_family
    from apps.studies.comparison.world import items_per_condition

    items = [
        {"code": "a", "family": "A", "condition": "plain"},
        {"code": "b", "family": "A", "condition": "warned"},
        {"code": "c", "family": "A", "condition": None},
        {"code": "d", "family": "B", "condition": None},
    ]
    raw = {"design": {"items": items}}
    assert items_per_family(raw) == 3  # A: a, b, c
    assert items_per_condition(raw) == 2  # no condition: c, d
    assert items_per_family({"design": {"items": []}}) == 0
