"""SVG plots of a result document, drawn on request (never stored) with matplotlib.

Deterministic bytes: the Agg/SVG backend, a fixed ``svg.hashsalt`` (matplotlib otherwise
draws random ids), no ``Date`` metadata, text as paths. The same document gives the same SVG.

Which plots a result offers, and how each is drawn, is its kind's (``Pipeline.plots``, a
``KindPlots``: the built-in kinds' are in ``apps/studies/<kind>/plots.py``); a kind without
plots offers none. This module draws any of them with the same settings.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.typing import RcKeyType

from apps.analysis.pipelines.base import KindPlots, PlotSpec, get_pipeline, shared_reports

_RC: dict[RcKeyType, Any] = {
    "svg.hashsalt": "preregistry",
    "svg.fonttype": "path",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
COLOURS = ("#0b5cad", "#a4161a", "#1d6b35", "#8a4b00", "#5a3e8a", "#4a5360")


def plot_specs(document: dict[str, Any]) -> list[PlotSpec]:
    """The plots a result document offers, numbered from 0: its kind's (none for a kind that
    is not registered or has no plots), then the shared report parts' (``SharedReport``)."""
    return [spec for spec, _plots, _own in _all_plots(document)]


def page_plot(document: dict[str, Any], plots: KindPlots, index: int) -> PlotSpec | None:
    """The page-wide spec of plot ``index`` of ``plots`` (a kind's or a shared part's), found
    by whose plot it is rather than by its place among the page's; None when the document does
    not offer it."""
    return next(
        (spec for spec, own, i in _all_plots(document) if own is plots and i == index), None
    )


def _all_plots(document: dict[str, Any]) -> list[tuple[PlotSpec, KindPlots, int]]:
    """Each plot's page-wide spec, the ``KindPlots`` that draws it and its own index there."""
    sources = [_plots_of(document)] + [part.plots for part in shared_reports()]
    out: list[tuple[PlotSpec, KindPlots, int]] = []
    for plots in sources:
        if plots is None:
            continue
        for spec in plots.specs(document):
            out.append((PlotSpec(len(out), spec.title, spec.alt), plots, spec.index))
    return out


# The narrowest and widest a plot is drawn for (CSS px): a phone's column to a wide screen.
MIN_WIDTH_PX, MAX_WIDTH_PX = 280, 1600
_PX_PER_INCH = 96  # CSS px per inch: matplotlib's 9 pt text is 12 px at the drawn size


def render_svg(document: dict[str, Any], index: int, width_px: int | None = None) -> bytes:
    """The SVG bytes of plot ``index`` of ``document`` (matplotlib writes its ``viewBox``, so
    the image scales). ``width_px`` (CSS px, clamped to 280–1600) redraws the figure for the
    width it is shown at, its text keeping its size (issue #37 §8: on a 375 px screen the plot
    is drawn for 340 px, not an 800 px figure shrunk or scrolled); None keeps the kind's own
    size. Raises IndexError for an unknown plot."""
    every = _all_plots(document)
    if not 0 <= index < len(every):
        raise IndexError(f"no plot {index}")
    _spec, plots, own = every[index]
    return draw_svg(lambda: plots.figure(document, own), width_px)


def draw_svg(draw: Callable[[], Any], width_px: int | None = None) -> bytes:
    """The deterministic SVG bytes of the matplotlib figure ``draw()`` makes (module
    docstring), redrawn for ``width_px`` CSS px as ``render_svg`` does."""
    with plt.rc_context(_RC):
        figure = draw()
        if width_px is not None:
            width = min(max(width_px, MIN_WIDTH_PX), MAX_WIDTH_PX) / _PX_PER_INCH
            figure.set_size_inches(width, figure.get_size_inches()[1])
        buffer = io.BytesIO()
        try:
            figure.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
        finally:
            plt.close(figure)
    return buffer.getvalue()


def _plots_of(document: dict[str, Any]) -> KindPlots | None:
    try:
        return get_pipeline(document["kind"]).plots
    except KeyError:
        return None


def forest(
    ax: Axes,
    points: Sequence[tuple[float, Sequence[float] | None]],
    labels: Sequence[str],
    *,
    fontsize: float,
) -> None:
    """Forest-plot rows on ``ax``, the first at the top: each point's estimate as a dot and its
    interval (``None``: none) as a bar, in the second colour where the interval excludes 0; a
    line at zero and one y tick a row, labelled ``labels``."""
    ys = list(range(len(points)))[::-1]
    for y, (estimate, interval) in zip(ys, points, strict=True):
        excludes = bool(interval and (interval[0] > 0 or interval[1] < 0))
        colour = COLOURS[1] if excludes else COLOURS[0]
        if interval:
            ax.plot(interval, [y, y], color=colour, linewidth=2)
        ax.plot([estimate], [y], marker="o", color=colour, markersize=5)
    ax.axvline(0, color="#333333", linewidth=0.8)
    ax.set_yticks(ys, labels, fontsize=fontsize)
    ax.set_ylim(-0.6, max(ys, default=0) + 0.6)


def errorbar(
    ax: Axes,
    xs: Sequence[float],
    cells: Sequence[dict[str, Any] | None],
    label: str,
    colour: str,
    offset: float = 0.0,
) -> None:
    """Points with interval bars on ``ax``: each cell's ``estimate`` at its x (shifted by
    ``offset``) with its ``interval``; cells without an estimate are left out."""
    points = [(x, c) for x, c in zip(xs, cells, strict=True) if c and c["estimate"] is not None]
    if not points:
        return
    x = [p[0] + offset for p in points]
    y = [p[1]["estimate"] for p in points]
    # max(0, …): a percentile interval need not contain its point estimate.
    low = [max(0, c["estimate"] - c["interval"][0]) if c.get("interval") else 0 for _, c in points]
    high = [max(0, c["interval"][1] - c["estimate"]) if c.get("interval") else 0 for _, c in points]
    ax.errorbar(x, y, yerr=[low, high], marker="o", capsize=3, label=label, color=colour)
