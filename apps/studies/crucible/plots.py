"""CRUCIBLE's plots: per evaluand, each graded axis's estimate at each autonomy rung with its
interval (a narrow portrait figure, readable on a 375 px screen)."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from apps.analysis.pipelines.base import panel_plots
from apps.analysis.plots import COLOURS as _COLOURS


def _describe(evaluand: str) -> tuple[str, str]:
    return (
        f"Graded axes by autonomy rung — {evaluand}",
        f"Evaluand {evaluand}: for each graded axis, the family-clustered estimate at "
        "each autonomy rung with its 95 % interval; axes not observed at a rung are "
        "left out, never imputed.",
    )


def _crucible_figure(estimates: dict[str, Any], evaluand: str) -> Figure:
    axes_names = estimates["axes_list"]
    rungs = [r["code"] for r in estimates["rungs"]]
    cells = {(c["rung"], c["axis"]): c for c in estimates["axes"] if c["evaluand"] == evaluand}
    # Drawn at about the size it is shown on a 375 px phone (≈ 280 px wide), with 11 pt text.
    figure, ax = plt.subplots(figsize=(3.9, 0.5 * len(axes_names) + 1.5))
    step = 0.7 / max(1, len(rungs))
    for j, rung in enumerate(rungs):
        ys, xs, low, high = [], [], [], []
        for i, axis in enumerate(axes_names):
            cell = cells.get((rung, axis))
            if cell is None or cell["estimate"] is None:
                continue
            y = len(axes_names) - 1 - i + (len(rungs) - 1) / 2 * step - j * step
            ys.append(y)
            xs.append(cell["estimate"])
            interval = cell.get("interval")
            low.append(max(0, cell["estimate"] - interval[0]) if interval else 0)
            high.append(max(0, interval[1] - cell["estimate"]) if interval else 0)
        ax.errorbar(
            xs,
            ys,
            xerr=[low, high],
            fmt="o",
            markersize=4,
            capsize=2,
            color=_COLOURS[j % len(_COLOURS)],
            label=rung,
        )
    ax.set_yticks(range(len(axes_names)), list(reversed(axes_names)))
    ax.tick_params(labelsize=11)
    ax.set_xlim(-0.02, 1.02)
    ax.set_xticks([0, 0.5, 1])
    ax.set_xlabel("estimate (95 % interval)", fontsize=11)
    ax.set_title(f"Evaluand {evaluand}", fontsize=12, pad=28)
    ax.legend(
        frameon=False,
        ncol=max(1, len(rungs)),
        loc="lower center",
        bbox_to_anchor=(0.5, 1.0),
        fontsize=11,
        handletextpad=0.2,
        columnspacing=0.8,
    )
    return figure


PLOTS = panel_plots(
    lambda estimates: estimates["evaluands"],
    describe=_describe,
    draw=_crucible_figure,
)
