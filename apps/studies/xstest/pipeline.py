"""The ``xstest`` pipeline: refusal rates per model on safe and on unsafe prompts, and agreement.

Röttger et al. (NAACL 2024), XSTest: each completion is labelled full compliance, full refusal
or partial refusal. The study's families are the prompt types (safe prompts and their unsafe
contrasts), its evaluands the models, its items the prompts. Reported:

- per evaluand × prompt type, the rate of each label (count / n over the final labels) with an
  item-clustered Korn–Graubard interval (``stats.proportions.label_rates``: Clopper–Pearson on
  the design-effect effective n; never zero-width, even for a count of 0), widened to its hull
  with the beta-binomial profile-likelihood interval where items hold several responses
  (``stats.proportions.clustered_rate_interval``; XSTest has one per item, so not there);
- Krippendorff's α between the primary reviewers, per evaluand and overall (nominal unless the
  plan says ordinal), against the plan's minimum, and beside it the percent agreement and
  Fleiss' κ the XSTest paper reports (``stats.agreement``);
- coverage n/N per evaluand × prompt type, exclusions, and responses left unresolved.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

import pandas as pd

from apps.analysis import inputs as data
from apps.analysis.pipelines.base import (
    INPUT_DOCUMENT_TYPE,
    EstimateValue,
    PlanInputError,
    PlanReader,
    Progress,
    no_progress,
    sub_seed,
)
from apps.analysis.pipelines.common import (
    coverage_table,
    exclusion_records,
    exclusion_summary,
    interval,
)
from apps.analysis.stats.agreement import agreement
from apps.analysis.stats.proportions import METHOD, RATE_MIN_CLUSTERS_FLOOR, label_rates
from apps.analysis.stats.reliability import Level, krippendorff_alpha, reliability_matrix
from apps.protocols.models import ProtocolVersion
from apps.protocols.plans import (
    AUDIT_COUNT,
    AUDIT_FRACTION,
    BOOTSTRAP_REPLICATES,
    EXCLUSION_REASONS,
    INTERVAL_COVERAGE,
    INTERVAL_METHOD,
    MIN_CLUSTERS,
    REPETITIONS,
    RESERVATION_MINUTES,
    SCORES_PER_RESPONSE,
    SEED,
    EstimateSpec,
    PipelineDeclaration,
    PlanTemplate,
    ReportSection,
    agreement_parameters,
    register_plan_template,
)

KIND = "xstest"

_STATISTIC, _MINIMUM = agreement_parameters(
    ("krippendorff_alpha_nominal", "krippendorff_alpha_ordinal"),
    "Krippendorff's α on the three labels (full compliance, full refusal, partial refusal): "
    "nominal, or ordinal.",
)
_AGREEMENT = (replace(_STATISTIC, default="krippendorff_alpha_nominal"), _MINIMUM)

DECLARATION = PipelineDeclaration(
    kind=KIND,
    title="XSTest refusal rates",
    summary="The rate of each label (full compliance, full refusal, partial refusal) per "
    "evaluand × prompt type with item-clustered bootstrap intervals, and Krippendorff's α "
    "between the reviewers. It evaluates no decision table.",
    parameters=(
        SEED,
        # The defaults are what ``compute`` reads when the plan leaves a parameter unset (a
        # generic plan on this pipeline); the xstest preset starts a draft with them empty.
        replace(INTERVAL_METHOD, default="bootstrap"),
        replace(INTERVAL_COVERAGE, default="0.95"),
        MIN_CLUSTERS,
        replace(BOOTSTRAP_REPLICATES, default="10000"),
        *_AGREEMENT,
        EXCLUSION_REASONS,
    ),
    estimates=(
        EstimateSpec(
            "label_rates",
            "rate",
            True,
            "The share of responses given each label, per evaluand and prompt type.",
            primary=True,
            needs="a categorical rubric field with choices, and scored responses",
        ),
        EstimateSpec(
            "alpha",
            "coefficient",
            False,
            "Krippendorff's α between the primary reviewers over all responses.",
            needs="at least two reviewers scoring the same responses",
        ),
    ),
    sections=(
        ReportSection("rates", "Label rates", "Per evaluand × prompt type × label, with n."),
        ReportSection("reliability", "Agreement", "α overall and per evaluand vs the minimum."),
        ReportSection("coverage", "Coverage", "n/N per evaluand × prompt type."),
        ReportSection("exclusions", "Exclusions", "Excluded attempts by reason code."),
    ),
    decision_table=False,
)


def _label_field(fields: list[dict[str, Any]]) -> dict[str, Any]:
    categorical = [f for f in fields if f["kind"] in ("categorical", "ordinal") and f["choices"]]
    named = [f for f in categorical if f["name"] == "label"]
    if not (named or categorical):
        raise PlanInputError(
            "the rubric has no categorical field with choices to take rates of",
            where="rubric",
        )
    return (named or categorical)[0]


def collect(version: ProtocolVersion) -> dict[str, Any]:
    """The XSTest study's tidy inputs: one row per analysed response (final label) and the
    primary reviewers' labels, with coverage plan and exclusions."""
    return assemble(data.raw(version))


def _ratings(ratings: list[Any], entry: dict[str, Any], name: str, labels: list[Any]) -> None:
    """Append the primaries' own labels of one response (pre-adjudication values)."""
    for score in entry.get("scores", []):
        value = score["values"].get(name)
        if value in labels:
            ratings.append(
                {
                    "position": entry["position"],
                    "evaluand": entry["evaluand"],
                    "rater": score["rater"],
                    "label": value,
                }
            )


def assemble(raw: dict[str, Any]) -> dict[str, Any]:
    """The XSTest inputs from the raw reads (``apps.analysis.inputs.raw``), real or synthetic."""
    design = raw["design"]
    observed = raw["observations"]
    field = _label_field(raw["rubric_fields"])
    labels = field["choices"]
    family_of = {item["code"]: item["family"] for item in design["items"]}

    rows: list[dict[str, Any]] = []
    ratings: list[dict[str, Any]] = []
    unresolved = 0
    planned: Counter[Any] = Counter()
    for entry in observed["administrations"]:
        prompt_type = family_of[entry["item"]]
        planned[(entry["evaluand"], prompt_type)] += 1
        if entry["status"] != "scored" and not (
            entry.get("awaiting_adjudication") or entry.get("partially_scored")
        ):
            continue
        label = entry["final"].get(field["name"]) if entry["status"] == "scored" else None
        if label not in labels:
            # Not in the rates; its primaries' labels still enter α (Krippendorff 2011).
            unresolved += entry["status"] == "scored"
            _ratings(ratings, entry, field["name"], labels)
            continue
        rows.append(
            {
                "position": entry["position"],
                "evaluand": entry["evaluand"],
                "prompt_type": prompt_type,
                "item": entry["item"],
                "repetition": entry["repetition"],
                "label": label,
                "final_method": entry["final_method"],
            }
        )
        _ratings(ratings, entry, field["name"], labels)
    return {
        "document": INPUT_DOCUMENT_TYPE,
        "kind": KIND,
        "label_field": field["name"],
        "labels": labels,
        "prompt_types": [
            {"code": f["code"], "name": f["name"], "role": f["role"]} for f in design["families"]
        ],
        "rows": rows,
        "ratings": ratings,
        "planned": [
            {"evaluand": evaluand, "prompt_type": prompt_type, "N": n}
            for (evaluand, prompt_type), n in sorted(planned.items())
        ],
        "exclusions": exclusion_records(observed["administrations"]),
        "counts": {**observed["counts"], "unresolved": unresolved, "analysed": len(rows)},
    }


def compute(
    inputs: dict[str, Any],
    *,
    parameters: dict[str, Any],
    seed: int,
    progress: Progress = no_progress,
) -> dict[str, Any]:
    """Label rates per evaluand × prompt type with item-clustered intervals, and α (pure)."""
    plan = PlanReader(parameters)
    confidence = plan.number("interval_coverage", default=0.95)
    replicates = plan.integer("bootstrap_replicates", default=10_000)
    method = plan.choice("interval_method", choices=("bootstrap", "analytic"), default="bootstrap")
    statistic = plan.choice(
        "agreement_statistic",
        choices=("krippendorff_alpha_nominal", "krippendorff_alpha_ordinal"),
        default="krippendorff_alpha_nominal",
    )
    minimum = plan.number("agreement_minimum", default=None)
    min_clusters = plan.integer("min_clusters", default=RATE_MIN_CLUSTERS_FLOOR)
    level: Level = "ordinal" if statistic.endswith("ordinal") else "nominal"
    labels = list(inputs["labels"])
    notes = []
    if method == "bootstrap":
        notes.append(
            "The plan names bootstrap intervals; rates are given the Korn–Graubard interval "
            "instead, because a percentile bootstrap of a count of 0 is the zero-width "
            "interval 0–0 and covers rare rates far below its nominal level (docs/analysis.md)."
        )

    rows = pd.DataFrame(inputs["rows"])
    names = {p["code"]: p["name"] for p in inputs["prompt_types"]}
    rates = []
    method = METHOD  # Korn–Graubard, or its hull once items hold several responses
    progress(20, "Label rates")
    if not rows.empty:
        for prompt_type in sorted(rows["prompt_type"].unique()):
            frame = rows[rows["prompt_type"] == prompt_type]
            result = label_rates(
                frame,
                label="label",
                cluster="item",
                labels=labels,
                group="evaluand",
                seed=sub_seed(seed, KIND, "rates", prompt_type),
                replicates=replicates,
                confidence=confidence,
                min_clusters=min_clusters,
            )
            method = result.method if result.method != METHOD else method
            for rate in result.rates:
                rates.append(
                    {
                        "evaluand": rate.group,
                        "prompt_type": prompt_type,
                        "prompt_type_name": names.get(prompt_type, prompt_type),
                        "label": rate.label,
                        "count": rate.count,
                        "n": rate.n,
                        "rate": rate.rate,
                        "interval": interval(rate.interval),
                        "n_items": rate.n_clusters,
                        "effective_n": rate.effective_n,
                        **({"note": rate.note} if rate.note else {}),
                    }
                )

    progress(70, "Agreement between reviewers")
    ratings = pd.DataFrame(inputs["ratings"])
    reliability = {
        "statistic": statistic,
        "level": level,
        "minimum": minimum,
        "overall": _alpha(ratings, labels, level, minimum),
        "per_evaluand": [
            {"evaluand": evaluand, **_alpha(frame, labels, level, minimum)}
            for evaluand, frame in (
                sorted(ratings.groupby("evaluand", sort=True)) if not ratings.empty else []
            )
        ],
    }
    observed = Counter((r["evaluand"], r["prompt_type"]) for r in inputs["rows"])
    progress(90, "Coverage")
    return {
        "labels": labels,
        "interval": {
            "method": f"item-clustered {method}",
            "confidence": confidence,
            "replicates": replicates,
        },
        "rates": rates,
        "reliability": reliability,
        "coverage": coverage_table(inputs["planned"], observed, ("evaluand", "prompt_type")),
        "exclusions": exclusion_summary(inputs["exclusions"]),
        "counts": inputs["counts"],
        "settings": plan.settings(),
        "notes": notes,
    }


def _alpha(
    frame: pd.DataFrame, labels: list[Any], level: Level, minimum: float | None
) -> dict[str, Any]:
    """α against the plan's minimum, with percent agreement and Fleiss' κ beside it."""
    if frame.empty:
        return {"alpha": None, "note": "no primary scores", "meets_minimum": None}
    matrix = reliability_matrix(
        frame, unit="position", rater="rater", value="label", categories=labels
    )
    result = krippendorff_alpha(matrix.data, level).to_dict()
    result["raters"] = list(matrix.raters)
    result["meets_minimum"] = (
        None if minimum is None or result["alpha"] is None else result["alpha"] >= minimum
    )
    beside = agreement(frame, unit="position", rater="rater", value="label", categories=labels)
    result["percent_agreement"] = beside.percent_agreement
    result["fleiss_kappa"] = beside.fleiss_kappa
    result["agreement_units"] = beside.n_units
    return result


def tidy(inputs: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    header = [
        "position",
        "evaluand",
        "prompt_type",
        "item",
        "repetition",
        "label",
        "final_method",
    ]
    return header, [[row[h] for h in header] for row in inputs["rows"]]


def estimates_of(result: dict[str, Any]) -> dict[str, list[EstimateValue]]:
    """The named estimates of an XSTest result (one value each: the study has one report)."""
    rates = [r["rate"] for r in result.get("rates", []) if r.get("rate") is not None]
    alpha = (result.get("reliability") or {}).get("overall") or {}
    return {
        "label_rates": [
            EstimateValue(float(len(rates)))
            if rates
            else EstimateValue(None, "no scored response has a label")
        ],
        "alpha": [
            EstimateValue(float(alpha["alpha"]))
            if alpha.get("alpha") is not None
            else EstimateValue(None, str(alpha.get("note") or "no α could be computed"))
        ],
    }


XSTEST = register_plan_template(
    PlanTemplate(
        code="xstest",
        title="XSTest-style refusal study",
        pipeline="xstest",
        parameters=(
            SCORES_PER_RESPONSE,
            "seed",
            "interval_method",
            "interval_coverage",
            "min_clusters",
            "bootstrap_replicates",
            "agreement_statistic",
            "agreement_minimum",
            RESERVATION_MINUTES,
            AUDIT_COUNT,
            AUDIT_FRACTION,
            replace(REPETITIONS, default="1"),
        ),
        # A new draft holds these empty, as before the pipeline declared what it reads unset.
        defaults=dict.fromkeys(
            ("interval_method", "interval_coverage", "bootstrap_replicates", "agreement_statistic"),
            "",
        ),
        reviewer_scored=True,
        outlines={
            "hypotheses": "### Refusal rates\n\n### Over-refusal on safe prompts\n",
            "design": "### Prompts (safe and unsafe contrasts)\n\n### Models\n\n### Labels\n",
            "analysis": "### Rates and intervals\n\n### Agreement\n",
        },
    )
)
