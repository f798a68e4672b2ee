"""OPB-01 §6.1: the panel–system comparison recovers a planted gap with its sign (simulation)."""

import numpy as np
import pandas as pd
import pytest

from apps.analysis.stats.panel import panel_alpha, panel_comparison, system_flags


def _simulate(rng, *, panel_p: float, system_p: float, items: int = 12, members: int = 5):
    # Item-level heterogeneity on the logit scale, the same items for panel and system.
    effect = rng.normal(0, 0.5, size=items)
    logit = lambda p: np.log(p / (1 - p))  # noqa: E731
    expit = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    panel = pd.DataFrame(
        [
            {
                "member": f"p{m}",
                "item": f"a{i:02d}",
                "flagged": int(rng.random() < expit(logit(panel_p) + effect[i])),
            }
            for m in range(members)
            for i in range(items)
        ]
    )
    system = pd.DataFrame(
        [
            {"item": f"a{i:02d}", "flagged": int(rng.random() < expit(logit(system_p) + effect[i]))}
            for i in range(items)
            for _ in range(20)
        ]
    )
    return panel, system


@pytest.mark.parametrize("panel_p, system_p, sign", [(0.1, 0.5, 1), (0.5, 0.1, -1)])
def test_a_planted_panel_system_gap_is_recovered_with_its_sign(panel_p, system_p, sign):
    rng = np.random.default_rng(61)
    runs, right_sign = 200, 0
    for _ in range(runs):
        panel, system = _simulate(rng, panel_p=panel_p, system_p=system_p)
        difference = panel_comparison(panel, system, method="analytic")["difference"]
        lo, hi = difference["interval"]
        right_sign += (lo > 0) if sign > 0 else (hi < 0)
    # A gap of about 0.4 with 12 items: its sign is established (interval excludes 0) nearly always.
    assert right_sign / runs >= 0.95


def test_no_gap_gives_an_interval_around_zero_at_the_nominal_rate():
    rng = np.random.default_rng(62)
    runs, covered = 300, 0
    for _ in range(runs):
        panel, system = _simulate(rng, panel_p=0.3, system_p=0.3)
        lo, hi = panel_comparison(panel, system, method="analytic")["difference"]["interval"]
        covered += lo < 0 < hi
    assert covered / runs >= 0.92


def test_rates_list_and_alpha_on_a_small_known_case():
    panel = pd.DataFrame(
        [
            {"member": m, "item": i, "flagged": int(i == "a1")}
            for m in ("p1", "p2")
            for i in ("a1", "a2", "a3")
        ]
    )
    system = pd.DataFrame(
        [
            {"item": i, "flagged": f}
            for i, f in [("a1", 1), ("a1", 1), ("a2", 1), ("a2", 1), ("a3", 0), ("a3", 1)]
        ]
    )
    out = panel_comparison(panel, system, method="analytic")
    assert out["panel_rate"]["estimate"] == pytest.approx(1 / 3)
    assert out["system_rate"]["estimate"] == pytest.approx((1 + 1 + 0.5) / 3)
    assert out["difference"]["estimate"] == pytest.approx((0 + 1 + 0.5) / 3)
    assert out["difference"]["interval"] is None and out["difference"]["pairs_required"] == 6
    # a2: the system flags every response, no panel member flags it; a3: exactly half, not more.
    assert [r["item"] for r in out["system_flagged_panel_not"]] == ["a2"]
    assert panel_alpha(panel)["alpha"] == pytest.approx(1.0)


def test_the_plans_system_flag_definition_is_applied():
    r, d = np.array([1, 0, 0, np.nan]), np.array([0, 1, 0, 0])
    assert system_flags(r, d, "refusal").tolist()[:3] == [1, 0, 0]
    assert system_flags(r, d, "refusal_or_deflection")[:3].tolist() == [1, 1, 0]
    with pytest.raises(ValueError, match="unknown system flag"):
        system_flags(r, d, "hedging")
