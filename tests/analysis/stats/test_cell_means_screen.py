"""The rule screen's candidate intervals (tests/calibration/screen_cell_means.py) are what they
are named: docs/analysis.md's figures for the Wilson, Jeffreys and mid-p intervals at n* and the
beta-binomial on χ²₁ come from these functions (issue #36 §1)."""

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from tests.calibration.screen_cell_means import jeffreys_at, mid_p_at, wilson_at

CASES = [(81, 263), (15, 148), (0, 20), (1, 29), (29, 29)]


@pytest.mark.parametrize(("x", "n"), CASES)
def test_wilson_and_jeffreys_at_whole_counts_are_statsmodels(x, n):
    assert wilson_at(x / n, n, 0.95) == pytest.approx(
        proportion_confint(x, n, alpha=0.05, method="wilson"), abs=1e-12
    )
    # Brown, Cai & DasGupta (2001) set the Jeffreys limit at the bound for x = 0 (or n).
    low, high = proportion_confint(x, n, alpha=0.05, method="jeffreys")
    expected = (0.0 if x == 0 else low, 1.0 if x == n else high)
    assert jeffreys_at(x / n, n, 0.95) == pytest.approx(expected, abs=1e-12)


def test_mid_p_for_no_event_has_its_closed_form():
    # ½(1 − p)ⁿ = α/2: 0 of 20 gives 1 − 0.05^(1/20) = 0.1391 (Newcombe 1998, Stat. Med. 17).
    assert mid_p_at(0.0, 20, 0.95)[1] == pytest.approx(1 - 0.05 ** (1 / 20), rel=1e-9)
    assert round(mid_p_at(0.0, 20, 0.95)[1], 4) == 0.1391


def test_fractional_effective_counts_give_limits_between_their_neighbours():
    # Korn–Graubard's x* and n* are not whole: the limits move monotonically in x*.
    lows = [mid_p_at(x / 40.5, 40.5, 0.95)[0] for x in (3.0, 3.4, 4.0)]
    assert np.all(np.diff(lows) > 0)
