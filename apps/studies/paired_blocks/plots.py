"""Route choice's plots: per model × sub-study (never both sub-studies in one plot), a forest
plot of the paired contrasts with their block-clustered bootstrap intervals."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from apps.analysis.pipelines.base import panel_plots
from apps.analysis.plots import forest
from apps.studies.paired_blocks.pipeline import _interval


def _describe(panel: tuple[str, str]) -> tuple[str, str]:
    model, sub = panel
    return (
        f"Paired contrasts — {model}, sub-study {sub}",
        f"Forest plot for model {model} in sub-study {sub} alone: each contrast's mean "
        "within-block paired difference per endpoint, with its block-clustered bootstrap "
        "interval and a line at zero.",
    )


def _panel_figure(estimates: dict[str, Any], panel: tuple[str, str]) -> Figure:
    model, sub = panel
    rows = [r for r in estimates["contrasts"] if r["evaluand"] == model and r["sub_study"] == sub]
    return forest_figure(rows)


def _forest_panels(estimates: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted({(r["evaluand"], r["sub_study"]) for r in estimates.get("contrasts", [])})


def forest_figure(rows: list[dict[str, Any]]) -> Figure:
    """A forest plot of one model's paired contrasts in ONE sub-study (seed 002: the sub-studies
    are never combined, so neither is a plot): one panel per primary endpoint, one row per
    contrast, the block-clustered bootstrap interval as a bar and a line at zero. Secondary
    endpoints (tokens, operations, …) are in the table, on their own scales. 3.3 in (about
    320 CSS px) wide with 10 pt text, so that it is readable at its own size on a 375 px screen.

    Raises ValueError when ``rows`` hold more than one sub-study or model.
    """
    subs = {r["sub_study"] for r in rows}
    models = {r["evaluand"] for r in rows}
    if len(subs) > 1 or len(models) > 1:
        raise ValueError(
            f"a forest plot shows one model in one sub-study, not {sorted(subs)} × "
            f"{sorted(models)} (SUB_STUDIES_NEVER_POOLED)"
        )
    # The simple effects are in the table; the plot keeps main effects and interactions.
    shown = [
        r
        for r in rows
        if r["estimate"] is not None and r.get("role") == "primary" and r.get("group") != "simple"
    ]
    endpoints = list(dict.fromkeys(r["endpoint"] for r in shown)) or ["(none)"]
    per_panel = max(1, max(sum(r["endpoint"] == e for r in shown) for e in endpoints))
    figure, axes = plt.subplots(
        len(endpoints),
        1,
        figsize=(3.3, 0.9 + len(endpoints) * (0.45 + 0.26 * per_panel)),
        sharex=True,
        squeeze=False,
    )
    bounds = [abs(v) for r in shown for v in (_interval(r) or [r["estimate"]])]
    limit = max([0.1, *bounds]) * 1.1
    for ax, endpoint in zip(axes[:, 0], endpoints, strict=True):
        mine = [r for r in shown if r["endpoint"] == endpoint]
        forest(
            ax,
            [(r["estimate"], _interval(r)) for r in mine],
            [r["contrast"] for r in mine],
            fontsize=10,
        )
        ax.set_xlim(-limit, limit)
        ax.set_title(endpoint, fontsize=10, loc="left")
        ax.tick_params(axis="x", labelsize=9)
    axes[-1, 0].set_xlabel("paired difference (high − low)", fontsize=9)
    if shown:
        label = shown[0].get("label")
        title = f"{shown[0]['evaluand']} · sub-study {shown[0]['sub_study']}"
        figure.suptitle(f"{title}\n{label}" if label else title, fontsize=10)
    return figure


PLOTS = panel_plots(
    _forest_panels,
    describe=_describe,
    draw=_panel_figure,
)
