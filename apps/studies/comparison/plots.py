"""The comparison's plot: per comparison, a forest plot of each outcome's difference per model,
with its interval (red where the interval excludes 0)."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from apps.analysis.pipelines.base import panel_plots
from apps.analysis.plots import forest


def _panels(estimates: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["condition"], c["reference"]) for c in estimates.get("comparisons", [])]


def _describe(panel: tuple[str, str]) -> tuple[str, str]:
    condition, reference = panel
    return (
        f"Differences, {condition} − {reference}",
        f"A forest plot: each outcome's difference between conditions {condition} and "
        f"{reference} per model, with its interval; the line marks no difference.",
    )


def _figure(estimates: dict[str, Any], panel: tuple[str, str]) -> Figure:
    condition, reference = panel
    rows = [
        r
        for r in estimates.get("differences", [])
        if (r["condition"], r["reference"]) == panel and r.get("estimate") is not None
    ]
    figure, ax = plt.subplots(figsize=(5.2, 0.9 + 0.32 * max(1, len(rows))))
    forest(
        ax,
        [(r["estimate"], r.get("interval")) for r in rows],
        [f"{r['outcome']} · {r['evaluand']}" for r in rows],
        fontsize=8,
    )
    ax.set_xlabel(f"difference ({condition} − {reference})")
    return figure


PLOTS = panel_plots(_panels, describe=_describe, draw=_figure)
