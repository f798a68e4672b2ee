"""OPB-01's plots: per surface, F_att and the refusal rate R by level, one line per family
(arm), with interval bars."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from apps.analysis.pipelines.base import panel_plots
from apps.analysis.plots import COLOURS as _COLOURS
from apps.analysis.plots import errorbar as _errorbar

_ARM_NAMES = {"B": "Family B", "A": "Family A"}


def _describe(surface: dict[str, Any]) -> tuple[str, str]:
    return (
        f"F_att and refusal rate by level — {surface['evaluand']}",
        f"Two panels for evaluand {surface['evaluand']}: mean F_att and refusal rate R at each "
        "level, one line per family, with interval bars.",
    )


def _opb_figure(estimates: dict[str, Any], surface: dict[str, Any]) -> Figure:
    figure, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    stages = [s for s in surface["stages"] if s["stage"] in ("B", "A")]
    for n, (ax, measure, title) in enumerate(
        zip(axes, ("F_att", "R"), ("F_att (mean)", "Refusal rate R"), strict=True)
    ):
        for i, stage in enumerate(stages):
            levels = [c["level"] for c in stage["cells"]]
            _errorbar(
                ax,
                levels,
                [c[measure] for c in stage["cells"]],
                _ARM_NAMES.get(stage["stage"], stage["stage"]),
                _COLOURS[i],
                offset=0.06 * (i - 0.5),
            )
        ax.set_title(title)
        ax.set_xlabel("level")
        ax.set_ylim(-0.05, 1.05)
        ax.set_xticks(range(6), [f"L{i}" for i in range(6)])
        if n == 0 and stages:
            ax.legend(frameon=False)
    figure.suptitle(f"Evaluand {surface['evaluand']}")
    return figure


PLOTS = panel_plots(
    lambda estimates: estimates["surfaces"],
    describe=_describe,
    draw=_opb_figure,
)
