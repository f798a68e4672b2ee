import itertools

import numpy as np
import pandas as pd
import pytest

from apps.analysis.stats.slopes import level_slope, op_ratio, segmented_slopes


def _battery(slope_a, slope_b, *, n_items=12, noise=0.0, seed=0, levels_a=range(6)):
    """Responses whose per-level means rise by exactly ``slope`` per level in each family.

    Items differ by a constant offset, which shifts every level alike and so leaves the slope
    of any resample unchanged; ``noise`` adds independent response-level error.
    """
    rng = np.random.default_rng(seed)
    rows = []
    for family, slope, levels in (("A", slope_a, levels_a), ("B", slope_b, range(4))):
        for item in range(n_items):
            offset = 0.02 * item
            for level, repetition in itertools.product(levels, range(2)):
                value = 0.1 + offset + slope * level + noise * rng.normal()
                rows.append(
                    {
                        "family": family,
                        "item": f"{family}{item}",
                        "level": level,
                        "f_att": value,
                        "rep": repetition,
                    }
                )
    return pd.DataFrame(rows)


def test_segmented_slopes_are_differences_of_consecutive_means():
    assert segmented_slopes({0: 0.0, 1: 1.0, 2: 4.0, 3: 9.0}) == {
        "L0→L1": 1.0,
        "L1→L2": 3.0,
        "L2→L3": 5.0,
    }


def test_a_segment_touching_an_absent_level_is_not_observed_not_interpolated():
    slopes = segmented_slopes({0: 0.1, 1: 0.2, 3: 0.5})
    assert slopes == {"L0→L1": pytest.approx(0.1), "L1→L2": None, "L2→L3": None}


def test_level_slope_recovers_a_linear_trend():
    assert level_slope({0: 0.2, 1: 0.3, 2: 0.4, 3: 0.5}) == pytest.approx(0.1)


def test_op_ratio_recovers_known_slopes_and_their_ratio_exactly():
    result = op_ratio(_battery(0.05, 0.15), seed=1, replicates=500)
    assert result.beta_a.estimate == pytest.approx(0.05)
    assert result.beta_b.estimate == pytest.approx(0.15)
    assert result.rho == pytest.approx(1 / 3)
    # Every resample has the same slopes, so the intervals collapse onto them.
    assert result.beta_a.interval == pytest.approx((0.05, 0.05))
    assert result.rho_interval == pytest.approx((1 / 3, 1 / 3))
    assert result.unstable is False and result.reasons == ()
    assert result.beta_a.segments == pytest.approx({"L0→L1": 0.05, "L1→L2": 0.05, "L2→L3": 0.05})


def test_levels_above_l3_do_not_enter_the_shared_comparison():
    data = _battery(0.05, 0.15)
    data.loc[data["level"] >= 4, "f_att"] = 0.99  # Family A only exists there
    assert op_ratio(data, seed=1, replicates=100).beta_a.estimate == pytest.approx(0.05)


def test_op_ratio_with_noise_covers_the_true_values():
    result = op_ratio(_battery(0.05, 0.15, n_items=40, noise=0.05, seed=3), seed=2, replicates=2000)
    lo, hi = result.beta_b.interval
    assert lo < 0.15 < hi
    lo, hi = result.rho_interval
    assert lo < 1 / 3 < hi
    assert abs(result.rho - 1 / 3) < 0.1


def test_a_small_beta_b_makes_the_ratio_unstable():
    result = op_ratio(_battery(0.05, 0.01), seed=1, replicates=200)
    assert result.unstable is True
    assert any("below 0.05" in reason for reason in result.reasons)


def test_a_beta_b_interval_covering_zero_makes_the_ratio_unstable():
    data = _battery(0.05, 0.0, noise=0.2, seed=9)
    result = op_ratio(data, seed=1, replicates=500, min_abs_beta_b=0.0)
    assert result.unstable is True
    assert "beta_B interval covers 0" in result.reasons


def test_an_absent_level_is_refused_rather_than_approximated():
    data = _battery(0.05, 0.15)
    data = data[~((data["family"] == "B") & (data["level"] == 2))]
    with pytest.raises(ValueError, match=r"family 'B' has no responses at level\(s\) \[2\]"):
        op_ratio(data, seed=0)


def test_cluster_mean_aggregation_gives_each_item_one_vote_per_level():
    # Item B0 is administered 9 extra times at L3 with a high score: observation weighting lets
    # it pull L3's mean up, item-mean weighting does not.
    data = _battery(0.05, 0.15)
    extra = pd.DataFrame(
        [{"family": "B", "item": "B0", "level": 3, "f_att": 0.95, "rep": r} for r in range(9)]
    )
    heavy = pd.concat([data, extra], ignore_index=True)
    by_item = op_ratio(heavy, seed=0, replicates=50, aggregation="cluster_mean")
    by_response = op_ratio(heavy, seed=0, replicates=50)
    assert by_response.beta_b.estimate > by_item.beta_b.estimate
    item_mean_b0_l3 = (2 * (0.1 + 0.45) + 9 * 0.95) / 11
    other = [0.1 + 0.02 * k + 0.45 for k in range(1, 12)]
    assert by_item.beta_b.level_means[3] == pytest.approx((item_mean_b0_l3 + sum(other)) / 12)


def test_to_dict_is_plain_data():
    result = op_ratio(_battery(0.05, 0.15), seed=1, replicates=50).to_dict()
    assert result["rho_OP"] == pytest.approx(1 / 3)
    assert result["beta_A"]["level_means"].keys() == {"0", "1", "2", "3"}
