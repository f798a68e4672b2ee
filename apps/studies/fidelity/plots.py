"""Seed 003's plot: the fidelity rate, each axis's pass rate and the drift rate, one horizontal
bar each with its interval (narrow: readable at 375 px)."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from apps.analysis.pipelines.base import panel_plots
from apps.analysis.plots import COLOURS as _COLOURS


def _fidelity_figure(estimates: dict[str, Any]) -> Figure:
    rows = [("fidelity", estimates["fidelity"])]
    rows += [(f"{axis} pass", part) for axis, part in estimates["axes"].items()]
    rows.append(("drift", estimates["drift"]))
    figure, ax = plt.subplots(figsize=(3.6, 3.2))
    ys = list(range(len(rows)))[::-1]
    rates = [part["rate"] for _, part in rows]
    low = [max(0, p["rate"] - p["interval"][0]) if p.get("interval") else 0 for _, p in rows]
    high = [max(0, p["interval"][1] - p["rate"]) if p.get("interval") else 0 for _, p in rows]
    colours = [_COLOURS[0]] + [_COLOURS[2]] * (len(rows) - 2) + [_COLOURS[1]]
    ax.barh(ys, rates, color=colours)
    ax.errorbar(rates, ys, xerr=[low, high], fmt="none", ecolor="#1b1f24", capsize=2)
    ax.set_yticks(ys, [name for name, _ in rows])
    ax.set_xlim(0, 1.05)
    ax.set_xlabel("rate")
    return figure


# One plot of the whole result, once it has a fidelity rate.
PLOTS = panel_plots(
    # Pooled when the plan pools (or one evaluand), else one plot per evaluand (issue #36 §5).
    lambda estimates: (
        [estimates]
        if estimates.get("fidelity")
        else [part for part in (estimates.get("by_evaluand") or {}).values() if part["fidelity"]]
    ),
    describe=lambda part: (
        "Fidelity, axis pass and drift rates"
        + (f" of evaluand {part['evaluand']}" if part.get("evaluand") else ""),
        "Horizontal bars: the fidelity rate, the pass rate of each axis A1 to A5 and the "
        "drift rate, each with its clustered interval.",
    ),
    draw=lambda estimates, _: _fidelity_figure(estimates),
)
