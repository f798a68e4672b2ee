"""SVG plots of a result document, drawn on request (never stored) with matplotlib.

Deterministic bytes: the Agg/SVG backend, a fixed ``svg.hashsalt`` (matplotlib otherwise
draws random ids), no ``Date`` metadata, text as paths. The same document gives the same SVG.

- ``opb``: per surface, F_att and the refusal rate R by level, one line per family (arm), with
  interval bars.
- ``xstest``: per prompt type, each label's rate per model, with interval bars.
- ``crucible``: per evaluand, each graded axis's estimate at each autonomy rung with its
  interval (a narrow portrait figure, readable on a 375 px screen).
- ``paired_blocks``: per model × sub-study (never both sub-studies in one plot), a forest plot of
  the paired contrasts with their block-clustered bootstrap intervals.
- ``fidelity``: the fidelity rate, each axis's pass rate and the drift rate, one horizontal bar
  each with its interval (narrow: readable at 375 px).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.typing import RcKeyType

_RC: dict[RcKeyType, Any] = {
    "svg.hashsalt": "preregistry",
    "svg.fonttype": "path",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
_COLOURS = ("#0b5cad", "#a4161a", "#1d6b35", "#8a4b00", "#5a3e8a", "#4a5360")
_ARM_NAMES = {"B": "Family B", "A": "Family A"}


@dataclass(frozen=True)
class PlotSpec:
    index: int
    title: str
    alt: str


def plot_specs(document: dict) -> list[PlotSpec]:
    """The plots a result document offers, numbered from 0."""
    estimates = document["estimates"]
    if document["kind"] == "opb":
        return [
            PlotSpec(
                i,
                f"F_att and refusal rate by level — {s['evaluand']}",
                f"Two panels for evaluand {s['evaluand']}: mean F_att and refusal rate R at each "
                "level, one line per family, with interval bars.",
            )
            for i, s in enumerate(estimates["surfaces"])
        ]
    if document["kind"] == "paired_blocks":
        return [
            PlotSpec(
                i,
                f"Paired contrasts — {model}, sub-study {sub}",
                f"Forest plot for model {model} in sub-study {sub} alone: each contrast's mean "
                "within-block paired difference per endpoint, with its block-clustered bootstrap "
                "interval and a line at zero.",
            )
            for i, (model, sub) in enumerate(_forest_panels(estimates))
        ]
    if document["kind"] == "xstest":
        return [
            PlotSpec(
                0,
                "Label rates per model by prompt type",
                "One panel per prompt type: each label's rate per model, with interval bars.",
            )
        ]
    if document["kind"] == "crucible":
        return [
            PlotSpec(
                i,
                f"Graded axes by autonomy rung — {evaluand}",
                f"Evaluand {evaluand}: for each graded axis, the family-clustered estimate at "
                "each autonomy rung with its 95 % interval; axes not observed at a rung are "
                "left out, never imputed.",
            )
            for i, evaluand in enumerate(estimates["evaluands"])
        ]
    if document["kind"] == "fidelity" and estimates.get("fidelity"):
        return [
            PlotSpec(
                0,
                "Fidelity, axis pass and drift rates",
                "Horizontal bars: the fidelity rate, the pass rate of each axis A1 to A5 and the "
                "drift rate, each with its clustered interval.",
            )
        ]
    return []


def render_svg(document: dict, index: int) -> bytes:
    """The SVG bytes of plot ``index`` of ``document``. Raises IndexError for an unknown plot."""
    specs = plot_specs(document)
    if not 0 <= index < len(specs):
        raise IndexError(f"no plot {index}")
    with plt.rc_context(_RC):
        if document["kind"] == "opb":
            figure = _opb_figure(document["estimates"]["surfaces"][index])
        elif document["kind"] == "crucible":
            figure = _crucible_figure(document["estimates"], index)
        elif document["kind"] == "paired_blocks":
            model, sub = _forest_panels(document["estimates"])[index]
            rows = [
                r
                for r in document["estimates"]["contrasts"]
                if r["evaluand"] == model and r["sub_study"] == sub
            ]
            figure = forest_figure(rows)
        elif document["kind"] == "fidelity":
            figure = _fidelity_figure(document["estimates"])
        else:
            figure = _xstest_figure(document["estimates"])
        buffer = io.BytesIO()
        try:
            figure.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
        finally:
            plt.close(figure)
    return buffer.getvalue()


def _errorbar(ax, xs, cells, label, colour, offset=0.0):
    points = [(x, c) for x, c in zip(xs, cells, strict=True) if c and c["estimate"] is not None]
    if not points:
        return
    x = [p[0] + offset for p in points]
    y = [p[1]["estimate"] for p in points]
    # max(0, …): a percentile interval need not contain its point estimate.
    low = [max(0, c["estimate"] - c["interval"][0]) if c.get("interval") else 0 for _, c in points]
    high = [max(0, c["interval"][1] - c["estimate"]) if c.get("interval") else 0 for _, c in points]
    ax.errorbar(x, y, yerr=[low, high], marker="o", capsize=3, label=label, color=colour)


def _opb_figure(surface: dict):
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
    figure.tight_layout()
    return figure


def _xstest_figure(estimates: dict):
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
    figure.tight_layout()
    return figure


def _crucible_figure(estimates: dict, index: int):
    evaluand = estimates["evaluands"][index]
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
    figure.tight_layout()
    return figure


def _forest_panels(estimates: dict) -> list[tuple[str, str]]:
    return sorted({(r["evaluand"], r["sub_study"]) for r in estimates.get("contrasts", [])})


def forest_figure(rows: list[dict]):
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
    bounds = [abs(v) for r in shown for v in (r.get("bootstrap_interval") or [r["estimate"]])]
    limit = max([0.1, *bounds]) * 1.1
    for ax, endpoint in zip(axes[:, 0], endpoints, strict=True):
        mine = [r for r in shown if r["endpoint"] == endpoint]
        ys = list(range(len(mine)))[::-1]
        for y, r in zip(ys, mine, strict=True):
            interval = r.get("bootstrap_interval")
            excludes = bool(interval and (interval[0] > 0 or interval[1] < 0))
            colour = _COLOURS[1] if excludes else _COLOURS[0]
            if interval:
                ax.plot(interval, [y, y], color=colour, linewidth=2)
            ax.plot([r["estimate"]], [y], marker="o", color=colour, markersize=5)
        ax.axvline(0, color="#333333", linewidth=0.8)
        ax.set_yticks(ys, [r["contrast"] for r in mine], fontsize=10)
        ax.set_ylim(-0.6, max(ys, default=0) + 0.6)
        ax.set_xlim(-limit, limit)
        ax.set_title(endpoint, fontsize=10, loc="left")
        ax.tick_params(axis="x", labelsize=9)
    axes[-1, 0].set_xlabel("paired difference (high − low)", fontsize=9)
    if shown:
        label = shown[0].get("label")
        title = f"{shown[0]['evaluand']} · sub-study {shown[0]['sub_study']}"
        figure.suptitle(f"{title}\n{label}" if label else title, fontsize=10)
    figure.tight_layout()
    return figure


def _fidelity_figure(estimates: dict):
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
    figure.tight_layout()
    return figure
