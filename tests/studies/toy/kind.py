"""The toy kind's one declaration: its plan template, rubric preset, pipeline, report section,
plot, gate check, frozen-document part, import check and the record terms it reads.

``register()`` plugs it in as ``apps/studies/<kind>/kind.py`` does at start-up (a test calls it,
``unregister()`` takes it out again); nothing outside this package names it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from apps.analysis import inputs as data
from apps.analysis.pipelines import (
    KindPlots,
    Pipeline,
    PlotSpec,
    RecordTerms,
    ReportTemplate,
    register_pipeline,
    unregister_pipeline,
)
from apps.analysis.pipelines.base import EstimateValue, PlanReader, Progress
from apps.protocols.components import Problem, VersionComponent
from apps.protocols.models import ParameterKind, ProtocolVersion
from apps.protocols.plans import (
    PLAN_TEMPLATES,
    REPETITIONS,
    SEED,
    EstimateSpec,
    ParameterSpec,
    PipelineDeclaration,
    PlanTemplate,
    ReportSection,
    register_plan_template,
    version_pipeline,
)
from apps.raters.rubric_templates import (
    RubricTemplate,
    register_rubric_template,
    unregister_rubric_template,
)
from apps.responses.formats import ImportProblem
from apps.responses.models import RosterEntry

KIND = "toy"
TEMPLATES = Path(__file__).with_name("templates")  # the loaders' directory for its section

MINUTES_LIMIT = ParameterSpec(
    "toy_minutes_limit",
    "minutes an attempt may take",
    ParameterKind.NUMBER,
    unit="minutes",
    minimum="1",
    help_text="A record that took longer is refused on import.",
)

DECLARATION = PipelineDeclaration(
    kind=KIND,
    title="Toy completion shares",
    summary="Per evaluand, the share of its administrations that completed, and their minutes.",
    parameters=(SEED, MINUTES_LIMIT),
    estimates=(
        EstimateSpec(
            "completed_share",
            "rate",
            False,
            "The share of administrations that completed, over every evaluand.",
            primary=True,
        ),
    ),
    sections=(ReportSection("shares", "Completion shares", "Per evaluand, with minutes."),),
    decision_table=False,
)


def _is_toy(version: ProtocolVersion) -> bool:
    return version_pipeline(version) == KIND


def assemble(raw: dict[str, Any]) -> dict[str, Any]:
    rows = [
        {
            "position": a["position"],
            "evaluand": a["evaluand"],
            "completed": a.get("terminal_outcome") == "completed",
            "minutes": a.get("minutes"),
        }
        for a in raw["observations"]["administrations"]
    ]
    return {"rows": rows}


def collect(version: ProtocolVersion) -> dict[str, Any]:
    return assemble(data.raw(version))


def compute(
    inputs: dict[str, Any], *, parameters: dict[str, str], seed: int, progress: Progress
) -> dict[str, Any]:
    read = PlanReader(parameters)
    read.number("toy_minutes_limit", default=None)
    shares = []
    for evaluand in sorted({r["evaluand"] for r in inputs["rows"]}):
        rows = [r for r in inputs["rows"] if r["evaluand"] == evaluand]
        minutes = [r["minutes"] for r in rows if r["minutes"] is not None]
        shares.append(
            {
                "evaluand": evaluand,
                "administrations": len(rows),
                "completed": sum(r["completed"] for r in rows),
                "share": sum(r["completed"] for r in rows) / len(rows),
                "minutes": sum(minutes) if minutes else None,
            }
        )
    total = len(inputs["rows"])
    completed = sum(r["completed"] for r in inputs["rows"])
    return {
        "shares": shares,
        "completed_share": completed / total if total else None,
        "settings": read.settings(),
    }


def tidy(inputs: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    header = ["position", "evaluand", "completed", "minutes"]
    return header, [[row[h] for h in header] for row in inputs["rows"]]


def estimates_of(result: dict[str, Any]) -> dict[str, list[EstimateValue]]:
    share = result.get("completed_share")
    value = EstimateValue(share) if share is not None else EstimateValue(None, "no administration")
    return {"completed_share": [value]}


def gate_checks(version: ProtocolVersion) -> list[Problem]:
    """The toy compares evaluands: a toy plan with fewer than two on its roster cannot freeze."""
    if not _is_toy(version) or RosterEntry.objects.filter(version=version).count() >= 2:
        return []
    return [Problem("toy_roster_small", "a toy study compares two evaluands or more")]


def frozen_part(version: ProtocolVersion) -> dict[str, Any] | None:
    """What the frozen document holds of a toy plan (nothing for other plans)."""
    if not _is_toy(version):
        return None
    return {"limit": data.plan_parameters(version).get("toy_minutes_limit")}


class _MinutesCheck:
    """Each record's ``minutes`` against the plan's limit (an ``apps.responses.importing``
    ``RecordCheck``)."""

    def __init__(self, limit: float) -> None:
        self.limit = limit

    def add(self, planned: Any) -> list[ImportProblem]:
        minutes = (planned.raw or {}).get("minutes")
        try:
            value = float(minutes)
        except (TypeError, ValueError):
            return [ImportProblem(planned.row, "minutes", f"{minutes!r} is not a number")]
        if value > self.limit:
            return [
                ImportProblem(
                    planned.row, "minutes", f"{value:g} exceeds the plan's limit {self.limit:g}"
                )
            ]
        return []

    def finish(self) -> list[ImportProblem]:
        return []


def import_check(version: ProtocolVersion) -> _MinutesCheck | None:
    if not _is_toy(version):
        return None
    return _MinutesCheck(float(data.plan_parameters(version)["toy_minutes_limit"]))


def record_terms(record: dict[str, Any]) -> dict[str, Any]:
    minutes = record.get("minutes")
    return {} if minutes in (None, "") else {"minutes": float(minutes)}


def plot_specs(document: dict[str, Any]) -> list[PlotSpec]:
    return [PlotSpec(0, "Completion share by evaluand", "One bar per evaluand: its share.")]


def figure(document: dict[str, Any], index: int) -> Figure:
    shares = document["estimates"]["shares"]
    drawn, ax = plt.subplots(figsize=(3, 2))
    ax.bar([s["evaluand"] for s in shares], [s["share"] for s in shares])
    return drawn


def section_context(document: dict[str, Any]) -> dict[str, Any]:
    slowest = max(document["estimates"]["shares"], key=lambda s: s["minutes"] or 0)
    return {"toy_slowest": slowest["evaluand"]}


PIPELINE = Pipeline(
    kind=KIND,
    title=DECLARATION.title,
    collect=collect,
    compute=compute,
    tidy=tidy,
    templates=(KIND,),
    declaration=DECLARATION,
    assemble=assemble,
    estimates_of=estimates_of,
    report=(ReportTemplate("studies/toy/report.html", section_context),),
    plots=KindPlots(specs=plot_specs, figure=figure),
    components=(
        VersionComponent(
            name="toy",
            checks=gate_checks,
            document=frozen_part,
            import_check=import_check,
            omit_empty_document=True,
        ),
    ),
    record_terms=RecordTerms(fields=("minutes",), terms=record_terms),
)

PLAN = PlanTemplate(
    code=KIND,
    title="Toy completion study",
    pipeline=KIND,
    parameters=("seed", "toy_minutes_limit", REPETITIONS),
    defaults={"seed": "11"},
)

# A reviewer's check of an attempt's recorded outcome: the toy's preset for a PI who has it scored.
RUBRIC = RubricTemplate(
    code=KIND,
    name="Completion check",
    instructions="Say whether the response completes the task its item sets.",
    fields=(
        {"name": "completed", "label": "Completed", "kind": "binary", "disagreement": "exact"},
        {"name": "note", "label": "Why not", "kind": "quote", "required": False},
    ),
)


def register() -> Pipeline:
    pipeline = register_pipeline(PIPELINE)
    register_plan_template(PLAN)
    register_rubric_template(RUBRIC)
    return pipeline


def unregister() -> None:
    unregister_pipeline(KIND)
    PLAN_TEMPLATES.pop(KIND, None)
    unregister_rubric_template(KIND)
