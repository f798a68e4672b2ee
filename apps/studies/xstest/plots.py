"""XSTest's plot: per prompt type, each label's rate per model, with interval bars."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from apps.analysis.pipelines.base import panel_plots
from apps.analysis.plots import COLOURS as _COLOURS


def _xstest_figure(estimates: dict[str, Any]) -> Figure:
    rates = estimates["rates"]
    types = sorted({r["prompt_type"] for r in rates})
    labels = estimates["labels"]
    figure, axes = plt.subplots(1, max(1, len(types)), figsize=(4.2 * max(1, len(types)), 3.4))
    axes = list(axes) if len(types) > 1 else [axes]
    for ax, prompt_type in zip(axes, types, strict=False):
        of_type = [r for r in rates if r["prompt_type"] == prompt_type]
        models = sorted({r["evaluand"] for r in of_type})
        width = 0.8 / max(1, len(labels))
        for j, label in enumerate(labels):
            rows = {r["evaluand"]: r for r in of_type if r["label"] == label}
            xs = [i + (j - (len(labels) - 1) / 2) * width for i in range(len(models))]
            ys = [rows[m]["rate"] if m in rows else 0 for m in models]
            err_low = [
                max(0, rows[m]["rate"] - rows[m]["interval"][0])
                if m in rows and rows[m]["interval"]
                else 0
                for m in models
            ]
            err_high = [
                max(0, rows[m]["interval"][1] - rows[m]["rate"])
                if m in rows and rows[m]["interval"]
                else 0
                for m in models
            ]
            ax.bar(xs, ys, width, label=str(label), color=_COLOURS[j % len(_COLOURS)])
            ax.errorbar(xs, ys, yerr=[err_low, err_high], fmt="none", ecolor="#1b1f24", capsize=2)
        name = of_type[0].get("prompt_type_name", prompt_type) if of_type else prompt_type
        ax.set_title(f"{name} prompts")
        ax.set_xticks(range(len(models)), models, rotation=30, ha="right")
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("rate")
    axes[0].legend(frameon=False, fontsize=7)
    return figure


# One plot of the whole result.
PLOTS = panel_plots(
    lambda estimates: [estimates],
    describe=lambda _: (
        "Label rates per model by prompt type",
        "One panel per prompt type: each label's rate per model, with interval bars.",
    ),
    draw=lambda estimates, _: _xstest_figure(estimates),
)
