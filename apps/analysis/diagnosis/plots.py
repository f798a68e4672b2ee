"""The design diagnosis' plots (issue #35 §3, §6), drawn from its result document with the
report plots' settings (``apps.analysis.plots.draw_svg``: deterministic SVG, redrawn for a
375 px screen): power per estimate with ±2 MC SE; with a sample-size curve, power and mean
interval width against the size."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt

from apps.analysis.diagnosis.engine import POWER_TARGET
from apps.analysis.pipelines.base import PlotSpec
from apps.analysis.plots import COLOURS, draw_svg

MAX_LINES = 6  # a curve plot shows the estimates with a test, at most this many


def _tested(point: dict[str, Any]) -> list[str]:
    return [n for n, v in point["estimates"].items() if v["power"]["value"] is not None]


def diagnosis_plot_specs(document: dict[str, Any]) -> list[PlotSpec]:
    """The plots a diagnosis offers: power per estimate (when any estimate has a test), and
    with a curve, power and interval width against the size."""
    specs = []
    if _tested(document["points"][0]):
        specs.append(
            PlotSpec(
                0,
                "Power per estimate",
                "Horizontal bars: the share of simulations in which each estimate's finding is "
                f"drawn, with ±2 Monte Carlo SE, and a line at {POWER_TARGET:.0%}.",
            )
        )
    size = document.get("size")
    if size:
        title = size["title"]
        specs.append(
            PlotSpec(
                len(specs),
                f"Power against {title}",
                f"Lines: power of each estimate at each value of {title}.",
            )
        )
        specs.append(
            PlotSpec(
                len(specs),
                f"Interval width against {title}",
                f"Lines: the mean width of each estimate's interval at each value of {title}.",
            )
        )
    return specs


def diagnosis_svg(document: dict[str, Any], index: int, width_px: int | None = None) -> bytes:
    """Plot ``index`` of ``diagnosis_plot_specs(document)`` as SVG. Raises IndexError."""
    specs = diagnosis_plot_specs(document)
    if not 0 <= index < len(specs):
        raise IndexError(f"no plot {index}")
    title = specs[index].title
    if title == "Power per estimate":
        return draw_svg(lambda: _power_bars(document), width_px)
    key = "power" if title.startswith("Power against") else "mean_width"
    return draw_svg(lambda: _curve(document, key), width_px)


def _power_bars(document: dict[str, Any]) -> Any:
    point = document["points"][0]
    names = _tested(point)
    figure, ax = plt.subplots(figsize=(8, 0.35 * len(names) + 1.2))
    values = [point["estimates"][n]["power"]["value"] for n in names]
    errors = [2 * (point["estimates"][n]["power"]["se"] or 0) for n in names]
    ax.barh(range(len(names)), values, xerr=errors, color=COLOURS[0], capsize=3)
    ax.set_yticks(range(len(names)), [n if len(n) <= 40 else n[:39] + "…" for n in names])
    ax.invert_yaxis()
    ax.axvline(POWER_TARGET, color=COLOURS[1], linestyle="--", linewidth=1)
    ax.set_xlim(0, 1)
    ax.set_xlabel("power (share of simulations)")
    return figure


def _curve(document: dict[str, Any], key: str) -> Any:
    points = document["points"]
    sizes = [p["size"] for p in points]
    names = [
        n for n in points[0]["estimates"] if points[0]["estimates"][n][key]["value"] is not None
    ]
    figure, ax = plt.subplots(figsize=(8, 3.2))
    for i, name in enumerate(names[:MAX_LINES]):
        ys = [p["estimates"].get(name, {}).get(key, {}).get("value") for p in points]
        xs = [x for x, y in zip(sizes, ys, strict=True) if y is not None]
        ax.plot(
            xs,
            [y for y in ys if y is not None],
            marker="o",
            label=name[:40],
            color=COLOURS[i % len(COLOURS)],
        )
    if key == "power":
        ax.axhline(POWER_TARGET, color="#888888", linestyle="--", linewidth=1)
        ax.set_ylim(0, 1)
    ax.set_xlabel(document["size"]["title"])
    ax.set_ylabel("power" if key == "power" else "mean interval width")
    if names:
        ax.legend(fontsize=7, loc="best")
    return figure
