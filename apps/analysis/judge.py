"""Judge validation in every result, on every report and on the scoring dashboard (issue 34 §5).

Shared by every study kind, as machine agreement is: a run whose inputs hold
``judge_validation`` (``apps.analysis.inputs.judge_validation_inputs``: some machine-scored
field has human values) gets ``estimates.judge_validation`` (``validation_from_inputs``), the
report page a section (``analysis/_judge_validation.html``) and a plot of α and κ with their
intervals, registered as the shared report parts (``pipelines.base.register_shared_report``)
beside each kind's own. The scoring dashboard gets the same figures once the outcomes are
unsealed (``apps.raters.final.register_dashboard_part``). The statistics are
``apps.analysis.stats.judge``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apps.analysis.pipelines.base import KindPlots, PlanReader, PlotSpec, ReportTemplate
from apps.analysis.stats.judge import DEFAULT_REPLICATES, Bootstrap, judge_validation

# Replicates of the item-clustered bootstrap: the statistics' own default, fixed (not the
# plan's bootstrap_replicates, which a study sets for its own estimates, up to 10,000), so that
# the dashboard, which computes on request, and the report give the same intervals for the same
# seed.
REPLICATES = DEFAULT_REPLICATES


def judge_confidence(parameters: Mapping[str, str]) -> float:
    """The intervals' coverage: the plan's ``interval_coverage`` read as every run reads it
    (``PlanReader``), 0.95 when unset. Raises ValueError naming the parameter when its text is
    not a finite number (the freeze refuses such a value)."""
    return PlanReader(parameters).number("interval_coverage", default=0.95)


def validation_from_inputs(
    inputs: list[dict[str, Any]], *, seed: int, confidence: float = 0.95
) -> list[dict[str, Any]]:
    """Per field and machine scorer: ``{"field", "scorer", "level", "labels", "strata"?,
    **judge_validation(...)}`` (``apps.analysis.stats.judge``). Pure: reads only ``inputs``
    (``judge_validation_inputs``' shape) and draws with ``seed``."""
    out = []
    for entry in inputs:
        weights = entry.get("weights")
        for code, machine in entry["scorers"].items():
            result = judge_validation(
                machine=machine,
                final=entry["final"],
                reviewers=entry["reviewers"],
                clusters=entry["clusters"],
                level=entry["level"],
                labels=entry["labels"],
                weights=weights,
                bootstrap=Bootstrap(REPLICATES, confidence, seed),
            )
            strata = _strata(entry) if weights is not None else {}
            out.append(
                {
                    "field": entry["field"],
                    "scorer": code,
                    "level": entry["level"],
                    **result,
                    **({"strata": strata} if strata else {}),
                }
            )
    return out


def _strata(entry: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for key, stratum in entry["strata"].items():
        row = out.setdefault(stratum, {"audited": 0, "weight": entry["weights"][key]})
        row["audited"] += 1
    return dict(sorted(out.items()))


def dashboard_validation(version: Any) -> list[dict[str, Any]]:
    """The scoring dashboard's judge validation (outcomes unsealed): from the same inputs a run
    reads, with the plan's seed and interval coverage.

    The inputs are read on every request (a few indexed queries); the bootstrap over them
    (``REPLICATES`` draws per scorer and field, seconds on a large audit) runs once per distinct
    input and is kept in the cache under the inputs' SHA-256, so that the dashboard, its API and
    the scorers page, viewed again and again between two imports, do not redraw it."""
    from django.core.cache import cache

    from apps.analysis.inputs import judge_validation_inputs
    from apps.analysis.pipelines.base import seed_from
    from apps.core.canonical import canonical_json, sha256_hex

    inputs = judge_validation_inputs(version)
    if not inputs:
        return []
    # The plan read as a run of this version reads it (analysis.services): the same seed and
    # coverage, so the dashboard's intervals are the report's.
    parameters = dict(version.parameters.values_list("name", "value"))
    confidence = judge_confidence(parameters)
    seed, _ = seed_from(parameters, version.sha256)
    key = "judge-validation:" + sha256_hex(
        canonical_json(
            {"inputs": inputs, "seed": seed, "confidence": str(confidence), "r": REPLICATES}
        )
    )
    cached: list[dict[str, Any]] | None = cache.get(key)
    if cached is None:
        cached = validation_from_inputs(inputs, seed=seed, confidence=confidence)
        cache.set(key, cached, timeout=24 * 3600)
    return cached


# -- the report: one section and one plot, whatever the kind -----------------------------------


def _plotted(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        row
        for row in document.get("estimates", {}).get("judge_validation", [])
        if row["final"]["alpha"] is not None or row["final"]["kappa"] is not None
    ]


def plot_specs(document: dict[str, Any]) -> list[PlotSpec]:
    rows = _plotted(document)
    if not rows:
        return []
    described = "; ".join(
        f"{r['scorer']} on {r['field']}: α {_fmt(r['final']['alpha'])}, κ "
        f"{_fmt(r['final']['kappa'])}"
        for r in rows
    )
    return [
        PlotSpec(
            0,
            "Judge validation: each machine scorer against the reviewers' final values",
            f"Krippendorff's α and Cohen's κ with item-clustered intervals. {described}.",
        )
    ]


def _fmt(value: float | None) -> str:
    return "not defined" if value is None else f"{value:.2f}"


@dataclass(frozen=True)
class Series:
    """How one statistic of a row's ``final`` is drawn: its legend label, marker, colour (an
    index into ``plots.COLOURS``) and vertical shift within the row."""

    label: str
    marker: str
    colour: int
    shift: float


# Keyed by the statistic's name in the result, so each is drawn and labelled as itself.
SERIES = {
    "alpha": Series("α", "o", 0, 0.12),
    "kappa": Series("κ", "s", 1, -0.12),
}


def figure(document: dict[str, Any], index: int) -> Any:
    """α (circles) and κ (squares) per scorer and field, with their intervals: one row each,
    labels on the left, drawn to stay readable when redrawn for a 340 px column."""
    from matplotlib.figure import Figure

    from apps.analysis.plots import COLOURS

    rows = _plotted(document)
    if index != 0 or not rows:
        raise IndexError(f"no plot {index}")
    fig = Figure(figsize=(6.4, 0.9 + 0.55 * len(rows)))
    ax = fig.subplots()
    ys = list(range(len(rows)))[::-1]
    for name, series in SERIES.items():
        for y, row in zip(ys, rows, strict=True):
            value = row["final"][name]
            if value is None:
                continue
            interval = row["final"][f"{name}_interval"]
            err = (
                [[max(0.0, value - interval[0])], [max(0.0, interval[1] - value)]]
                if interval
                else None
            )
            ax.errorbar(
                [value],
                [y + series.shift],
                xerr=err,
                fmt=series.marker,
                color=COLOURS[series.colour],
                capsize=3,
                label=series.label,
            )
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    ax.legend(unique.values(), unique.keys(), loc="lower left", frameon=False)
    ax.set_yticks(ys, [f"{r['scorer']}\n{r['field']}" for r in rows])
    ax.set_xlim(min(-0.1, *(_low(r) for r in rows)), 1.0)
    ax.axvline(0, color="#888", linewidth=0.8)
    ax.set_xlabel("agreement with the reviewers' final values")
    return fig


def _low(row: dict[str, Any]) -> float:
    lows = [
        row["final"][f"{n}_interval"][0]
        for n in ("alpha", "kappa")
        if row["final"][f"{n}_interval"]
    ]
    return min(lows, default=0.0) - 0.05


def section_context(document: dict[str, Any]) -> dict[str, Any]:
    """The section's rows and the index of its plot among the page's plots (after the kind's)."""
    from apps.analysis.plots import page_plot

    return {
        "judge_validation": document.get("estimates", {}).get("judge_validation", []),
        "judge_plot": page_plot(document, PLOTS, 0),
    }


REPORT = ReportTemplate("analysis/_judge_validation.html", section_context)
PLOTS = KindPlots(specs=plot_specs, figure=figure)
