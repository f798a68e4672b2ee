"""The ``comparison`` pipeline: the study no template was written for (issue #34 §10).

Outcomes by condition and model, and the differences (and, for rates, ratios) between the
conditions the plan names, with intervals clustered as the plan says.

- **Outcomes** are rubric fields (reviewers' or a machine scorer's: the final value the
  rubric's final-value rule gives, ``apps.raters.final``): a binary field is a rate (of yes); a
  categorical or ordinal field a rate of each choice, or of the choice the plan names
  (``label=full_refusal``); an ordinal field may instead be a mean of its choices' ranks
  (``label:rank``, 1 for the first choice); count and number fields are means. The plan's
  ``outcomes`` lists them; left empty, every binary, categorical, ordinal, count and number
  field is an outcome (categorical and ordinal: each choice's rate).
- **Conditions** are the design's conditions (each item's condition); **models** the roster's
  evaluands. The plan's ``comparisons`` name the pairs, ``"<condition> vs <reference>"``.
- **Clusters** (the plan's ``cluster``): ``item`` (every response to one item), ``prompt``
  (one cell, item × level), ``block`` (the items linked to one base item — the same prompt
  under several conditions — or the item itself when it has no base item), or ``none``.
- Per model × condition × outcome: a rate with its Korn–Graubard interval
  (``stats.proportions.rate_interval``), or a mean with its cluster-robust t interval
  (``stats.comparison.clustered_mean``).
- Per model × comparison × outcome: the difference (condition − reference) with its
  cluster-robust interval (``stats.comparison.clustered_difference``: OLS, CR2, Bell–McCaffrey t;
  unclustered rates: Newcombe's hybrid score interval), and for rates the ratio with its log
  interval (``stats.comparison.clustered_rate_ratio``). Coverage of these intervals is measured
  by tests/calibration/test_calibration.py (docs/analysis.md).

Named estimates (the decision table's vocabulary), for outcome ``o`` and comparison ``B vs A``:
``diff[o][B - A]`` (one value per model; primary), ``ratio[o][B / A]`` (rates; one value per
model), and each model's own ``diff[o][B - A][model]`` and ``ratio[o][B / A][model]``. The
decision table is evaluated once per model: a name without a model reads that model's value.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from apps.analysis import inputs as data
from apps.analysis.pipelines.base import (
    INPUT_DOCUMENT_TYPE,
    EstimateValue,
    PlanInputError,
    PlanReader,
    Progress,
    json_parameter,
    no_progress,
)
from apps.analysis.pipelines.common import (
    binary,
    coverage_table,
    estimate_cell,
    exclusion_records,
    exclusion_summary,
    number,
)
from apps.analysis.stats.comparison import (
    CLUSTERED,
    DIFFERENCE_MIN_CLUSTERS_FLOOR,
    NEWCOMBE,
    Comparison,
    clustered_difference,
    clustered_mean,
    clustered_rate_ratio,
    independent_rate_difference,
)
from apps.analysis.stats.decision import evaluate_decision_table, numeric_parameters
from apps.analysis.stats.proportions import METHOD as RATE_METHOD
from apps.analysis.stats.proportions import rate_interval
from apps.protocols.models import ParameterKind, ProtocolVersion
from apps.protocols.plans import (
    AUDIT_COUNT,
    AUDIT_FRACTION,
    EXCLUSION_REASONS,
    INTERVAL_COVERAGE,
    MIN_CLUSTERS,
    REPETITIONS,
    RESERVATION_MINUTES,
    SCORES_PER_RESPONSE,
    SEED,
    EstimateSpec,
    ParameterSpec,
    PipelineDeclaration,
    PlanTemplate,
    ReportSection,
    register_plan_template,
)

KIND = "comparison"
CLUSTERS = ("item", "prompt", "block", "none")
RATE_KINDS = ("binary", "categorical", "ordinal")
MEAN_KINDS = ("count", "number")
SEPARATOR = " vs "

PARAMETERS = (
    SEED,
    replace(INTERVAL_COVERAGE, default="0.95"),
    replace(
        MIN_CLUSTERS,
        default=str(DIFFERENCE_MIN_CLUSTERS_FLOOR),
        help_text="Fewer clusters than this in a condition and its intervals are reported as "
        "unavailable, with the reason. The calibrated floors cannot be lowered: 10 per "
        "condition for differences, ratios and means, 6 for one condition's rate "
        "(docs/analysis.md).",
    ),
    ParameterSpec(
        "cluster",
        "interval clustering",
        ParameterKind.CHOICE,
        choices=CLUSTERS,
        default="item",
        help_text="What the intervals treat as independent: item (every response to one "
        "item), prompt (one cell, item × level), block (the items linked to one base item: "
        "the same prompt under several conditions), or none (every response independent).",
    ),
    ParameterSpec(
        "comparisons",
        "comparisons",
        ParameterKind.LIST,
        help_text='The conditions compared, each as "<condition> vs <reference>" by condition '
        'code, e.g. ["warned vs plain"]: the difference is condition − reference.',
    ),
    ParameterSpec(
        "outcomes",
        "outcomes",
        ParameterKind.LIST,
        required=False,
        help_text='The rubric fields compared: "refused" (a binary field: its rate; a count or '
        'number: its mean), "label=full_refusal" (the rate of one choice), "label:rank" (an '
        "ordinal field's mean rank). Empty: every binary, categorical, ordinal, count and "
        "number field (each choice's rate for categorical and ordinal fields).",
    ),
    EXCLUSION_REASONS,
)


def estimate_specs(
    outcomes: list[Outcome], comparisons: list[Pair], models: list[str]
) -> tuple[EstimateSpec, ...]:
    """The named estimates of a plan with these outcomes, comparisons and models."""
    out: list[EstimateSpec] = []
    for outcome in outcomes:
        for pair in comparisons:
            what = f"{outcome.name}: {pair.condition} − {pair.reference}"
            out.append(
                EstimateSpec(
                    diff_name(outcome.name, pair),
                    "contrast",
                    True,
                    f"The difference of {outcome.measure}s, {what}, per model.",
                    primary=True,
                    needs=f"items in conditions {pair.condition} and {pair.reference}",
                )
            )
            if outcome.measure == "rate":
                out.append(
                    EstimateSpec(
                        ratio_name(outcome.name, pair),
                        "coefficient",
                        True,
                        f"The ratio of rates, {outcome.name}: {pair.condition} / "
                        f"{pair.reference}, per model.",
                    )
                )
            for model in models:
                out.append(
                    EstimateSpec(
                        diff_name(outcome.name, pair, model),
                        "contrast",
                        True,
                        f"The difference of {outcome.measure}s, {what}, for {model}.",
                    )
                )
                if outcome.measure == "rate":
                    out.append(
                        EstimateSpec(
                            ratio_name(outcome.name, pair, model),
                            "coefficient",
                            True,
                            f"The ratio of rates, {outcome.name}: {pair.condition} / "
                            f"{pair.reference}, for {model}.",
                        )
                    )
    return tuple(out)


@dataclass(frozen=True)
class Pair:
    """One comparison the plan names: ``condition`` against ``reference`` (condition codes)."""

    condition: str
    reference: str


@dataclass(frozen=True)
class Outcome:
    """One outcome: its name, the rubric field, ``measure`` (rate or mean) and, for a rate of
    a choice, the ``event`` value; ``rank`` for an ordinal field's mean rank."""

    name: str
    field: str
    measure: str
    event: Any = None
    rank: bool = False
    choices: tuple[Any, ...] = ()

    def value(self, raw: Any) -> float | None:
        """The row's outcome from a final value (None: no value)."""
        if raw is None:
            return None
        if self.rank:
            return float(self.choices.index(raw) + 1) if raw in self.choices else None
        if self.measure == "mean":
            return number(raw)
        if self.event is None:
            code = binary(raw)
            return None if code is None else float(code)
        return float(raw == self.event) if raw in self.choices else None


def diff_name(outcome: str, pair: Pair, model: str = "") -> str:
    return f"diff[{outcome}][{pair.condition} - {pair.reference}]" + (f"[{model}]" if model else "")


def ratio_name(outcome: str, pair: Pair, model: str = "") -> str:
    return f"ratio[{outcome}][{pair.condition} / {pair.reference}]" + (
        f"[{model}]" if model else ""
    )


def _entries(name: str, text: Any) -> list[Any]:
    """The plan parameter ``name``, a JSON list, given as its text (read by ``json_parameter``,
    whose error names the parameter, as every pipeline's does) or already read.

    Raises PlanInputError naming the parameter when it is not JSON or not a list."""
    entries = json_parameter({name: text}, name, []) if isinstance(text, str) else text or []
    if not isinstance(entries, list):
        raise PlanInputError(
            f"plan parameter {name!r} is not a list: give a JSON list of text entries",
            where=f"parameter {name}",
        )
    return entries


def read_comparisons(text: Any, conditions: list[str] | None) -> list[Pair]:
    """The plan's ``comparisons`` (a JSON list text, or the list) as pairs.

    Raises PlanInputError naming the parameter: not a list of "<condition> vs <reference>",
    a condition the design lacks (when ``conditions`` is given), a condition against itself,
    a pair named twice.
    """
    where = "parameter comparisons"
    entries = _entries("comparisons", text)
    if not isinstance(entries, list) or not entries:
        raise PlanInputError(
            'the plan names no comparison: list them as ["<condition> vs <reference>"]',
            where=where,
        )
    pairs = []
    for entry in entries:
        parts = str(entry).split(SEPARATOR)
        if len(parts) != 2 or not all(p.strip() for p in parts):
            raise PlanInputError(
                f'comparison {entry!r} is not "<condition> vs <reference>"', where=where
            )
        pair = Pair(parts[0].strip(), parts[1].strip())
        if pair.condition == pair.reference:
            raise PlanInputError(
                f"comparison {entry!r} compares a condition with itself", where=where
            )
        if conditions is not None:
            unknown = [c for c in (pair.condition, pair.reference) if c not in conditions]
            if unknown:
                raise PlanInputError(
                    f"comparison {entry!r} names condition {unknown[0]!r}, which the design "
                    f"does not have (its conditions: {', '.join(conditions) or 'none'})",
                    where=where,
                )
        if pair in pairs:
            raise PlanInputError(f"comparison {entry!r} is named twice", where=where)
        pairs.append(pair)
    return pairs


def read_outcomes(text: Any, fields: list[dict[str, Any]]) -> list[Outcome]:
    """The plan's ``outcomes`` over the rubric's ``fields`` (``inputs.rubric_fields`` rows).

    Raises PlanInputError naming the parameter or the rubric: a field the rubric lacks, a
    field of a kind that has no rate or mean (checklist, quote), a choice the field lacks, or
    no outcome at all.
    """
    by_name = {f["name"]: f for f in fields}
    entries = _entries("outcomes", text)
    out: list[Outcome] = []
    if not entries:
        for f in fields:
            choices = tuple(f["choices"])
            if f["kind"] == "binary":
                out.append(Outcome(f["name"], f["name"], "rate"))
            elif f["kind"] in ("categorical", "ordinal"):
                out += [
                    Outcome(f"{f['name']}={c}", f["name"], "rate", c, choices=choices)
                    for c in choices
                ]
            elif f["kind"] in MEAN_KINDS:
                out.append(Outcome(f["name"], f["name"], "mean"))
        if not out:
            raise PlanInputError(
                "the rubric has no binary, categorical, ordinal, count or number field to compare",
                where="rubric",
            )
        return out
    where = "parameter outcomes"
    for entry in entries:
        text_entry = str(entry)
        name, _, event = text_entry.partition("=")
        name, _, rank = name.partition(":")
        found = by_name.get(name.strip())
        if found is None:
            raise PlanInputError(
                f"outcome {text_entry!r} names no field of the rubric (its fields: "
                f"{', '.join(by_name) or 'none'})",
                where=where,
            )
        f = found
        choices = tuple(f["choices"])
        if rank:
            if rank != "rank" or f["kind"] != "ordinal" or not choices:
                raise PlanInputError(
                    f"outcome {text_entry!r}: only an ordinal field has a mean rank "
                    f'("{f["name"]}:rank")',
                    where=where,
                )
            out.append(Outcome(text_entry, f["name"], "mean", rank=True, choices=choices))
        elif event:
            matches = [c for c in choices if str(c) == event]
            if f["kind"] not in ("categorical", "ordinal") or not matches:
                raise PlanInputError(
                    f"outcome {text_entry!r}: field {f['name']} has no choice {event!r}",
                    where=where,
                )
            out.append(Outcome(text_entry, f["name"], "rate", matches[0], choices=choices))
        elif f["kind"] == "binary":
            out.append(Outcome(text_entry, f["name"], "rate"))
        elif f["kind"] in MEAN_KINDS:
            out.append(Outcome(text_entry, f["name"], "mean"))
        else:
            raise PlanInputError(
                f"outcome {text_entry!r}: a {f['kind']} field has no rate or mean of its own; "
                f'name one of its choices ("{f["name"]}=<choice>")'
                + (f' or its mean rank ("{f["name"]}:rank")' if f["kind"] == "ordinal" else ""),
                where=where,
            )
    return out


def plan_estimates(version: ProtocolVersion) -> tuple[EstimateSpec, ...]:
    """The estimates a ``comparison`` plan of ``version`` produces, from its rubric, its
    ``outcomes`` and ``comparisons`` and its roster; an example vocabulary while any of them
    cannot be read (the gate names that problem itself)."""
    from apps.responses.models import RosterEntry

    parameters = data.plan_parameters(version)
    try:
        outcomes = read_outcomes(parameters.get("outcomes", ""), data.rubric_fields(version))
        pairs = read_comparisons(parameters.get("comparisons", ""), None)
    except (PlanInputError, ValueError):
        return ESTIMATES
    models = sorted(RosterEntry.objects.filter(version=version).values_list("code", flat=True))
    return estimate_specs(outcomes, pairs, models)


# The catalogue's example: a binary field ``refused`` and the comparison ``B vs A``.
ESTIMATES = estimate_specs([Outcome("refused", "refused", "rate")], [Pair("B", "A")], [])

DECLARATION = PipelineDeclaration(
    kind=KIND,
    title="Comparison of conditions (general)",
    summary="Outcomes (rates of binary and categorical fields, means of counts, numbers and "
    "ordinal ranks) per model × condition, and the differences (and ratios of rates) between "
    "the conditions the plan names, with intervals clustered by item, prompt or block.",
    parameters=PARAMETERS,
    estimates=ESTIMATES,
    estimates_for=plan_estimates,
    sections=(
        ReportSection("differences", "Differences", "Per model × comparison × outcome."),
        ReportSection("levels", "Outcomes by condition", "Per model × condition × outcome."),
        ReportSection("coverage", "Coverage", "n/N per model × condition."),
        ReportSection("exclusions", "Exclusions", "Excluded attempts by reason code."),
    ),
    decision_table=True,
)


def collect(version: ProtocolVersion) -> dict[str, Any]:
    """The comparison's tidy inputs (``assemble`` over ``inputs.raw``)."""
    return assemble(data.raw(version))


def _cluster_keys(item: dict[str, Any], level: Any) -> dict[str, str]:
    return {
        "prompt": f"{item['code']}|{level}",
        "block": str(item.get("base_item") or item["code"]),
    }


def assemble(raw: dict[str, Any]) -> dict[str, Any]:
    """The inputs from the raw reads (real or synthetic): one row per scored response with its
    model, condition, cluster keys and the final value of every analysable rubric field."""
    design = raw["design"]
    fields = [
        f
        for f in raw["rubric_fields"]
        if f["kind"] in RATE_KINDS + MEAN_KINDS
        and (f["kind"] == "binary" or f["kind"] in MEAN_KINDS or f["choices"])
    ]
    names = [f["name"] for f in fields]
    items = {item["code"]: item for item in design["items"]}
    rows: list[dict[str, Any]] = []
    planned: Counter[Any] = Counter()
    for entry in raw["observations"]["administrations"]:
        item = items[entry["item"]]
        condition = item["condition"] or ""
        planned[(entry["evaluand"], condition)] += 1
        if entry["status"] != "scored":
            continue
        final = entry.get("final") or {}
        rows.append(
            {
                "position": entry["position"],
                "evaluand": entry["evaluand"],
                "condition": condition,
                "item": entry["item"],
                "level": entry["level"],
                **_cluster_keys(item, entry["level"]),
                "values": {name: final.get(name) for name in names},
            }
        )
    return {
        "document": INPUT_DOCUMENT_TYPE,
        "kind": KIND,
        "fields": fields,
        "conditions": [c["code"] for c in design["conditions"]],
        "rows": rows,
        "planned": [
            {"evaluand": evaluand, "condition": condition, "N": n}
            for (evaluand, condition), n in sorted(planned.items())
        ],
        "decision_table": list(raw.get("decision_table") or []),
        "exclusions": exclusion_records(raw["observations"]["administrations"]),
        "counts": {**raw["observations"]["counts"], "analysed": len(rows)},
    }


def _level(
    outcome: Outcome, y: np.ndarray, clusters: np.ndarray, confidence: float, minimum: int
) -> dict[str, Any]:
    if outcome.measure == "rate":
        rate = rate_interval(y, clusters, confidence=confidence, min_clusters=minimum)
        return rate.as_cell()
    mean = clustered_mean(y, clusters, confidence=confidence, min_clusters=minimum)
    return estimate_cell(mean, n=mean.n)


def _difference(
    outcome: Outcome,
    y: np.ndarray,
    treated: np.ndarray,
    clusters: np.ndarray,
    *,
    unclustered: bool,
    confidence: float,
    minimum: int,
) -> Comparison:
    if outcome.measure == "rate" and unclustered:
        return independent_rate_difference(y, treated, confidence=confidence)
    return clustered_difference(y, treated, clusters, confidence=confidence, min_clusters=minimum)


def compute(
    inputs: dict[str, Any],
    *,
    parameters: dict[str, Any],
    seed: int,
    progress: Progress = no_progress,
) -> dict[str, Any]:
    """Levels per model × condition × outcome, and differences and ratios per model ×
    comparison × outcome (module docstring), and the decision table per model (pure; the
    intervals are analytic, so ``seed`` draws nothing)."""
    plan = PlanReader(parameters)
    confidence = plan.number("interval_coverage", default=0.95)
    minimum = plan.integer("min_clusters", default=DIFFERENCE_MIN_CLUSTERS_FLOOR)
    cluster = plan.choice("cluster", choices=CLUSTERS, default="item")
    outcomes = read_outcomes(parameters.get("outcomes", ""), inputs["fields"])
    pairs = read_comparisons(parameters.get("comparisons", ""), inputs["conditions"])
    frame = pd.DataFrame(inputs["rows"])
    models = sorted(frame["evaluand"].unique()) if not frame.empty else []
    levels: list[dict[str, Any]] = []
    differences: list[dict[str, Any]] = []
    progress(20, "Outcomes by condition")
    for outcome in outcomes:
        values = (
            frame["values"].map(lambda v, o=outcome: o.value(v.get(o.field)))
            if not frame.empty
            else pd.Series(dtype=float)
        )
        for model in models:
            of_model = frame[(frame["evaluand"] == model) & values.notna()]
            ys = values[of_model.index].to_numpy(dtype=float)
            labels = (
                of_model["position"].to_numpy()
                if cluster == "none"
                else of_model[cluster].to_numpy()
            )
            conditions = of_model["condition"].to_numpy()
            for condition in inputs["conditions"]:
                mask = conditions == condition
                if not mask.any():
                    continue
                levels.append(
                    {
                        "evaluand": model,
                        "outcome": outcome.name,
                        "measure": outcome.measure,
                        "condition": condition,
                        **_level(outcome, ys[mask], labels[mask], confidence, minimum),
                    }
                )
            for pair in pairs:
                keep = (conditions == pair.condition) | (conditions == pair.reference)
                treated = (conditions[keep] == pair.condition).astype(float)
                row = {
                    "evaluand": model,
                    "outcome": outcome.name,
                    "measure": outcome.measure,
                    "condition": pair.condition,
                    "reference": pair.reference,
                    "name": diff_name(outcome.name, pair),
                }
                if not treated.any() or treated.all():
                    missing = pair.reference if treated.any() else pair.condition
                    note = f"no scored response of {model} in condition {missing}"
                    differences.append({**row, "estimate": None, "interval": None, "note": note})
                    continue
                diff = _difference(
                    outcome,
                    ys[keep],
                    treated,
                    labels[keep],
                    unclustered=cluster == "none",
                    confidence=confidence,
                    minimum=minimum,
                ).to_dict()
                if outcome.measure == "rate":
                    ratio = clustered_rate_ratio(
                        ys[keep],
                        treated,
                        labels[keep],
                        confidence=confidence,
                        min_clusters=minimum,
                        clustered=cluster != "none",
                    ).to_dict()
                    diff["ratio"] = {"name": ratio_name(outcome.name, pair), **ratio}
                differences.append({**row, **diff})
    progress(80, "Decision table")
    observed = Counter((r["evaluand"], r["condition"]) for r in inputs["rows"])
    return {
        "outcomes": [
            {"name": o.name, "field": o.field, "measure": o.measure, "event": o.event}
            for o in outcomes
        ],
        "comparisons": [{"condition": p.condition, "reference": p.reference} for p in pairs],
        "models": models,
        "cluster": cluster,
        "interval": {
            "confidence": confidence,
            "rates": f"{cluster}-clustered {RATE_METHOD}",
            "differences": (
                f"rates: {NEWCOMBE}; means: {CLUSTERED}"
                if cluster == "none"
                else f"{cluster}-clustered {CLUSTERED}; where the clusters are nested in the "
                "conditions, its degrees of freedom under the random-effects working model"
            ),
        },
        "levels": levels,
        "differences": differences,
        "decisions": _decisions(differences, inputs["decision_table"], parameters),
        "coverage": coverage_table(inputs["planned"], observed, ("evaluand", "condition")),
        "exclusions": exclusion_summary(inputs["exclusions"]),
        "counts": inputs["counts"],
        "settings": plan.settings(),
    }


def _named(
    differences: list[dict[str, Any]],
) -> tuple[dict[str, dict[str, dict[str, Any]]], dict[str, dict[str, Any]]]:
    """(model → name → ``{"estimate", "interval"}`` under the names without a model, and every
    model's own ``…[model]`` names), for the values that have an interval (ratios too)."""
    per_model: dict[str, dict[str, dict[str, Any]]] = {}
    own: dict[str, dict[str, Any]] = {}
    for row in differences:
        model = row["evaluand"]
        per_model.setdefault(model, {})
        for entry in (row, row.get("ratio")):
            if not entry or entry.get("estimate") is None or entry.get("interval") is None:
                continue
            value = {"estimate": entry["estimate"], "interval": tuple(entry["interval"])}
            per_model[model][entry["name"]] = value
            own[f"{entry['name']}[{model}]"] = value
    return per_model, own


def _decisions(
    differences: list[dict[str, Any]], table: list[dict[str, Any]], parameters: dict[str, Any]
) -> dict[str, Any]:
    """The decision table once per model: a name without a model reads that model's value, a
    name with one (``…[model]``) that model's, whichever model's turn it is."""
    if not table:
        return {"evaluated": False, "note": "the plan has no decision table"}
    numeric = numeric_parameters(parameters)
    per_model, own = _named(differences)
    out: list[dict[str, Any]] = []
    for model in sorted(per_model):
        try:
            outcome = evaluate_decision_table(
                {**own, **per_model[model]}, numeric, table=table
            ).to_dict()
        except ValueError as error:
            out.append({"evaluand": model, "stage": "decision", "error": str(error)})
            continue
        out.append({"evaluand": model, "stage": "decision", "evaluated": True, **outcome})
    return {"evaluated": True, "per_model": out}


def tidy(inputs: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    header = ["position", "evaluand", "condition", "item", "level", "prompt", "block"]
    names = [f["name"] for f in inputs["fields"]]
    return header + names, [
        [row[h] for h in header] + [row["values"].get(n) for n in names] for row in inputs["rows"]
    ]


def estimates_of(result: dict[str, Any]) -> dict[str, list[EstimateValue]]:
    """``diff[o][B - A]`` and ``ratio[o][B / A]`` (one value per model) and each model's own
    ``…[model]``, read from a result."""
    out: dict[str, list[EstimateValue]] = {}
    for row in result.get("differences", []):
        model = row["evaluand"]
        for entry in (row, row.get("ratio")):
            if not entry:
                continue
            if entry.get("estimate") is None or entry.get("interval") is None:
                value = EstimateValue(None, entry.get("note") or "not computable", model)
            else:
                value = EstimateValue(float(entry["estimate"]), surface=model)
            out.setdefault(entry["name"], []).append(value)
            out.setdefault(f"{entry['name']}[{model}]", []).append(value)
    return out


COMPARISON = register_plan_template(
    PlanTemplate(
        code="comparison",
        title="Comparison of conditions (any other study)",
        pipeline=KIND,
        parameters=(
            "seed",
            "comparisons",
            "outcomes",
            "cluster",
            "interval_coverage",
            "min_clusters",
            replace(SCORES_PER_RESPONSE, default="1"),
            RESERVATION_MINUTES,
            replace(REPETITIONS, default="1"),
            AUDIT_COUNT,
            AUDIT_FRACTION,
        ),
        outlines={
            "hypotheses": "### Conditions compared\n\n### Expected differences\n",
            "design": "### Items and conditions\n\n### Models\n\n### Outcomes\n",
            "analysis": "### Differences and intervals\n\n### Clustering\n",
        },
    )
)
