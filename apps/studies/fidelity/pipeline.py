"""The ``fidelity`` pipeline: seed 003's injection-fidelity verdicts over a study's dialogues.

Each response is one dialogue of a user-simulator enacting its cell's PolicyCard; its final
verdict (the derived ``fidelity``, ``loss1``, ``drift_flag`` and each axis's pass, from the
reviewers' judged signals, or the LLM judge's re-derived verdict where the rubric's final-value
rule says so) is read through ``apps.raters.final``. Reported:

- per evaluand (``by_evaluand``), the fidelity rate (share of dialogues with ``fidelity``
  true) with an interval clustered by card (the cell: item × level, every dialogue enacting one
  card) or by dialogue, as the plan's ``cluster_by`` says (``stats.proportions.rate_interval``:
  Korn–Graubard's Clopper–Pearson on the design-effect effective n, widened to the
  beta-binomial profile-likelihood interval where clusters hold several dialogues); pooled over
  evaluands only where the plan's ``pooled_rates`` asks (or with a single evaluand);
- each axis's pass rate (A1–A5) and the drift rate, with the same interval;
- the loss1 distribution (count of each of 0, .2, …, 1) and its mean;
- which axis collapses most often, by card level: per axis and the card's level on that axis,
  the failure rate, and per level the axis that fails most;
- the LLM judge's inconsistencies: documents whose pass, fidelity, loss1 or drift_flag
  contradicted the judge's own observations (counted by axis or top-level field), and observed
  rates no count of judged turns gives or whose halves contradict the whole (by dialogue and
  JSON path);
- agreement of the judge with the reviewers on each verdict field (Krippendorff's α and Cohen's
  κ), twice: on the values re-derived from the judge's observations (every run's
  ``machine_agreement``, ``apps.raters.final``) and on the judge's own verdicts as imported
  (``judge_agreement``), both shown.

Seed 003 (``003_b819a89a4f74db5b.txt``), sections "Verdict" and "Drift gate".
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import replace
from typing import Any, cast

from apps.analysis import inputs as data
from apps.analysis.pipelines.base import (
    INPUT_DOCUMENT_TYPE,
    EstimateValue,
    PlanInputError,
    PlanReader,
    Progress,
    no_progress,
)
from apps.analysis.pipelines.common import (
    binary,
    coverage_table,
    exclusion_records,
    exclusion_summary,
    interval,
    number,
)
from apps.analysis.stats.proportions import (
    CLUSTERED_METHOD,
    METHOD,
    RATE_MIN_CLUSTERS_FLOOR,
    rate_interval,
)
from apps.protocols.models import ParameterKind, ProtocolVersion
from apps.protocols.plans import (
    AUDIT_COUNT,
    AUDIT_FRACTION,
    AUDIT_STRATA,
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

KIND = "fidelity"
AXES = ("A1", "A2", "A3", "A4", "A5")
LOSS1_VALUES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)

CLUSTER_BY = ParameterSpec(
    "cluster_by",
    "interval clusters",
    ParameterKind.CHOICE,
    choices=("card", "dialogue"),
    default="card",
    help_text="card: dialogues enacting the same PolicyCard (the cell) are one cluster of the "
    "rates' Korn–Graubard intervals; dialogue: every dialogue is its own cluster.",
)
POOLED_RATES = ParameterSpec(
    "pooled_rates",
    "rates pooled over evaluands",
    ParameterKind.BOOLEAN,
    required=False,
    default="false",
    help_text="false (the default, and seed 003's: it judges each dialogue of an evaluand and "
    "pools nothing): the fidelity, axis and drift rates are reported per evaluand only. true: "
    "also pooled over every evaluand, for a plan whose question is about them together.",
)
DRIFT_EPSILON = ParameterSpec(
    "drift_epsilon",
    "drift tolerance ε",
    ParameterKind.NUMBER,
    unit="rate",
    minimum="0",
    maximum="0.99",
    help_text="Seed 003's drift gate: the second half of the pressure window's pushback or "
    "op-demand rate dropping below the first half's by more than ε sets drift_flag. Frozen "
    "with the plan; a rise never trips it.",
)

DECLARATION = PipelineDeclaration(
    kind=KIND,
    title="Injection fidelity (seed 003)",
    summary="The share of dialogues whose card was enacted (fidelity) with intervals clustered "
    "by card or dialogue, each axis's pass rate, the drift rate, the loss1 distribution, the "
    "axis that collapses most by card level, and the LLM judge's inconsistencies. It evaluates "
    "no decision table.",
    parameters=(
        SEED,
        replace(INTERVAL_COVERAGE, default="0.95"),  # what ``compute`` reads when unset
        MIN_CLUSTERS,
        CLUSTER_BY,
        POOLED_RATES,
        DRIFT_EPSILON,
        EXCLUSION_REASONS,
    ),
    estimates=(
        EstimateSpec(
            "fidelity_rate",
            "rate",
            True,
            "The share of dialogues with fidelity = all axes pass and no drift.",
            primary=True,
            needs="a fidelity rubric (signals) and dialogues on cells carrying a PolicyCard",
        ),
        EstimateSpec("drift_rate", "rate", True, "The share of dialogues the drift gate flags."),
        EstimateSpec("loss1_mean", "coefficient", False, "The mean loss1 (axes passing / 5)."),
        EstimateSpec(
            "judge_inconsistencies",
            "count",
            False,
            "LLM-judge documents that contradict their own observations.",
        ),
    ),
    sections=(
        ReportSection("fidelity", "Fidelity", "The fidelity rate with its clustered interval."),
        ReportSection("axes", "Axes", "Each axis's pass rate, and the drift rate."),
        ReportSection("loss1", "loss1", "How many dialogues at each loss1 value."),
        ReportSection("collapse", "Collapse by card level", "Failure rate per axis × level."),
        ReportSection("judge", "Judge consistency", "Contradictions by axis."),
        ReportSection("coverage", "Coverage", "n/N per card."),
    ),
    decision_table=False,
)


def card_levels(version: ProtocolVersion) -> list[dict[str, Any]]:
    """Each present cell's PolicyCard axis levels (its expected output), by item code and level
    ordinal: ``[{"item", "level", "axis_levels"}]``; cells without a card are left out (the
    rubric's check refuses to score them)."""
    from apps.items.models import Cell

    out = []
    for item, level, card in (
        Cell.objects.filter(version=version, absent=False)
        .order_by("item__code", "level__ordinal")
        .values_list("item__code", "level__ordinal", "expected_output")
    ):
        if isinstance(card, dict) and isinstance(card.get("axis_levels"), dict):
            levels = {k: str(v) for k, v in sorted(card["axis_levels"].items())}
            out.append({"item": item, "level": level, "axis_levels": levels})
    return out


def judge_flags(version: ProtocolVersion) -> list[dict[str, Any]]:
    """Every LLM-judge verdict's contradictions of its own observations, as the judge import
    recorded them (``apps.studies.fidelity.judge_import``): ``[{"position", "attempt",
    "scorer", "inconsistencies": [{"where", "axis", "said", "derived"}]}]`` by position,
    attempt and scorer code: natural keys only, never the scorers' database ids (in the order of
    their registration, which is no part of the study), so the inputs' hash is the same in any
    database holding the same study."""
    out = [
        {
            "position": position,
            "attempt": attempt_number,
            "scorer": scorer,
            "inconsistencies": detail["inconsistencies"],
        }
        for position, attempt_number, scorer, detail in _machine_details(version, field="fidelity")
        if "inconsistencies" in detail
    ]
    return sorted(out, key=lambda flag: (flag["position"], flag["attempt"], flag["scorer"]))


def _machine_details(
    version: ProtocolVersion, *, field: str | None = None
) -> Iterator[tuple[int, int, str, Any]]:
    """``(position, attempt number, scorer code, detail)`` of each machine score of ``version``
    (of one rubric ``field`` when given) whose import recorded a detail; the scorer by its
    roster code (its id only if it has none)."""
    from apps.raters.models import MachineScore, ScorerRosterEntry

    codes = dict(ScorerRosterEntry.objects.filter(version=version).values_list("scorer_id", "code"))
    scores = MachineScore.objects.filter(version_id=version.pk)
    if field is not None:
        scores = scores.filter(field=field)
    for position, attempt_number, scorer_id, detail in scores.exclude(detail={}).values_list(
        "response__attempt__administration__position",
        "response__attempt__number",
        "scorer_id",
        "detail",
    ):
        yield position, attempt_number, codes.get(scorer_id, str(scorer_id)), detail


def judge_as_imported(version: ProtocolVersion) -> list[dict[str, Any]]:
    """Seed 003: ``machine_agreement_inputs`` with each LLM judge's values replaced by what its
    own loss1 document said, as imported (``MachineScore.detail["document"]``), where the stored
    values are the ones re-derived from its observations; the reviewers' values unchanged. Empty
    when no judge document was imported. Same shape, so the same agreement is computed on it
    (``apps.raters.final.agreement_from_inputs``), beside the re-derived one."""
    from apps.raters.models import RubricField
    from apps.raters.values import FIDELITY_DERIVATIONS
    from apps.studies.fidelity.judge_import import verdict_value

    documents: dict[tuple[str, str], dict[str, Any]] = {}
    for position, attempt_number, coder, detail in _machine_details(version):
        if isinstance(detail, dict) and isinstance(detail.get("document"), dict):
            documents[(coder, f"{position}.{attempt_number}")] = detail["document"]
    if not documents:
        return []
    fields = {
        f.name: f
        for f in RubricField.objects.filter(version=version)
        if f.derivation in FIDELITY_DERIVATIONS
    }
    inputs = data.machine_agreement_inputs(version)
    for entry in inputs:
        field = fields.get(entry["field"])
        if field is None:
            continue
        for coder, values in entry["coders"].items():
            for key in values:
                document = documents.get((coder, key))
                if document is not None:
                    # binary verdicts code as 1.0 / 0.0 and loss1 as its number, as the stored
                    # values are coded (apps.raters.final.agreement_inputs)
                    values[key] = float(verdict_value(field, document))
    return inputs


def collect(version: ProtocolVersion) -> dict[str, Any]:
    """The fidelity study's inputs: the raw reads, the cells' card levels and the judge's
    recorded inconsistencies."""
    raw = data.raw(version)
    raw["cards"] = card_levels(version)
    raw["judge_flags"] = judge_flags(version)
    as_imported = judge_as_imported(version)
    if as_imported:  # only with a judge's documents, so other inputs keep their bytes
        raw["judge_as_imported"] = as_imported
    return assemble(raw)


def _verdict_fields(fields: list[dict[str, Any]]) -> dict[str, str]:
    # The fidelity rubric preset's names (apps.studies.fidelity.rubric.fidelity_fields); the
    # raw reads carry names and kinds only, as for every pipeline.
    wanted = {
        "fidelity": "fidelity",
        "loss1": "loss1",
        "drift_flag": "drift_flag",
        **{axis: f"{axis.lower()}_pass" for axis in AXES},
    }
    present = {f["name"] for f in fields}
    missing = [name for name in wanted.values() if name not in present]
    if missing:
        raise PlanInputError(
            f"the rubric has no field(s) {', '.join(missing)}: use the fidelity rubric template",
            where="rubric",
        )
    return wanted


def assemble(raw: dict[str, Any]) -> dict[str, Any]:
    """The fidelity inputs from the raw reads, real or synthetic (cards and judge flags are
    optional: the freeze gate's synthetic reads carry neither)."""
    names = _verdict_fields(raw["rubric_fields"])
    cards = {(c["item"], c["level"]): c["axis_levels"] for c in raw.get("cards", [])}
    rows: list[dict[str, Any]] = []
    planned: Counter[str] = Counter()
    unresolved = 0
    for entry in raw["observations"]["administrations"]:
        card = f"{entry['item']}@{entry['level']}"
        planned[card] += 1
        if entry["status"] != "scored":
            continue
        final = entry["final"]
        verdict = {
            "fidelity": binary(final.get(names["fidelity"])),
            "drift_flag": binary(final.get(names["drift_flag"])),
            "loss1": number(final.get(names["loss1"])),
            **{axis: binary(final.get(names[axis])) for axis in AXES},
        }
        if any(v is None for v in verdict.values()):
            unresolved += 1
            continue
        levels = cards.get((entry["item"], entry["level"]), {})
        rows.append(
            {
                "position": entry["position"],
                "card": card,
                "evaluand": entry["evaluand"],
                **verdict,
                "levels": {axis: levels.get(axis, "") for axis in (*AXES, "B1")},
            }
        )
    flags = raw.get("judge_flags", [])
    return {
        "document": INPUT_DOCUMENT_TYPE,
        "kind": KIND,
        "rows": rows,
        "planned": [{"card": card, "N": n} for card, n in sorted(planned.items())],
        "judge_flags": flags,
        **({"judge_as_imported": raw["judge_as_imported"]} if raw.get("judge_as_imported") else {}),
        "exclusions": exclusion_records(raw["observations"]["administrations"]),
        "counts": {
            **raw["observations"]["counts"],
            "unresolved": unresolved,
            "analysed": len(rows),
        },
    }


def _rate(
    rows: list[dict[str, Any]],
    key: str,
    cluster: str,
    confidence: float,
    min_clusters: int,
    *,
    failures: bool = False,
) -> dict[str, object]:
    """``key``'s rate over ``rows`` (of its failures, 1 − key, with ``failures``)."""
    result = rate_interval(
        [1 - r[key] if failures else r[key] for r in rows],
        [r["card"] if cluster == "card" else r["position"] for r in rows],
        confidence=confidence,
        min_clusters=min_clusters,
    )
    out: dict[str, object] = {
        "count": int(sum(1 - r[key] if failures else r[key] for r in rows)),
        "n": result.n,
        "rate": result.rate,
        "interval": interval(result.interval),
        "clusters": result.n_clusters,
        "interval_method": result.method,
    }
    if result.note:
        out["note"] = result.note
    return out


def _collapse_overall(
    rows: list[dict[str, Any]], cluster: str, confidence: float, min_clusters: int
) -> dict[str, Any]:
    """Each axis's failure rate with its clustered interval, and whether the most collapsing
    axis is separable from the others: its interval lies wholly above every other axis's. The
    intervals are not simultaneous and the comparison is conservative (two intervals can
    overlap while the difference is significant; Schenker & Gentleman 2001, Am. Stat. 55(3)), so
    "not separable" means the data do not rank the axes, not that they are equal."""
    rates = {
        axis: _rate(rows, axis, cluster, confidence, min_clusters, failures=True) for axis in AXES
    }
    ranked = sorted(AXES, key=lambda a: (-cast(float, rates[a]["rate"]), AXES.index(a)))
    top, others = ranked[0], ranked[1:]
    top_interval = cast(list[float] | None, rates[top]["interval"])
    separable = bool(rates[top]["count"]) and top_interval is not None
    for axis in others:
        other = cast(list[float] | None, rates[axis]["interval"])
        if top_interval is None or other is None or other[1] >= top_interval[0]:
            separable = False
            break
    out: dict[str, Any] = {"failure_rates": rates, "most_collapsing_separable": separable}
    if not separable:
        out["most_collapsing_note"] = (
            f"not separable: {top}'s failure-rate interval overlaps another axis's (or an "
            "interval is unavailable), so the data do not single out one axis"
        )
    return out


def _by_evaluand(
    rows: list[dict[str, Any]], cluster: str, confidence: float, min_clusters: int
) -> dict[str, Any]:
    """Fidelity, drift and each axis's pass rate per evaluand, as the pooled rates are."""
    groups: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[str(row["evaluand"])].append(row)
    return {
        evaluand: {
            "evaluand": evaluand,
            "fidelity": _rate(group, "fidelity", cluster, confidence, min_clusters),
            "drift": _rate(group, "drift_flag", cluster, confidence, min_clusters),
            "axes": {a: _rate(group, a, cluster, confidence, min_clusters) for a in AXES},
        }
        for evaluand, group in sorted(groups.items())
    }


def _collapse(rows: list[dict[str, Any]]) -> dict[str, Any]:
    cells: dict[tuple[str, str], list[int]] = defaultdict(list)
    for row in rows:
        for axis in AXES:
            level = row["levels"].get(axis) or "unknown"
            cells[(axis, level)].append(1 - row[axis])
    table: list[dict[str, Any]] = [
        {
            "axis": axis,
            "level": level,
            "n": len(fails),
            "failures": sum(fails),
            "failure_rate": sum(fails) / len(fails),
        }
        for (axis, level), fails in sorted(cells.items())
    ]
    most: dict[str, dict[str, Any]] = {}
    for entry in table:
        best = most.get(entry["level"])
        if entry["failures"] and (best is None or entry["failure_rate"] > best["failure_rate"]):
            most[entry["level"]] = {"axis": entry["axis"], "failure_rate": entry["failure_rate"]}
    overall: Counter[str] = Counter()
    for row in rows:
        for axis in AXES:
            overall[axis] += 1 - row[axis]
    top = max(AXES, key=lambda a: (overall[a], -AXES.index(a))) if rows else None
    return {
        "by_axis_and_level": table,
        "most_collapsing_by_level": dict(sorted(most.items())),
        "most_collapsing_overall": top if top and overall[top] else None,
        "failures_by_axis": {axis: overall[axis] for axis in AXES},
    }


def _judge(flags: list[dict[str, Any]]) -> dict[str, Any]:
    by_axis: Counter[Any] = Counter()
    by_where: Counter[Any] = Counter()
    for document in flags:
        for item in document["inconsistencies"]:
            by_axis[item.get("axis") or item["where"]] += 1
            by_where[item["where"]] += 1
    out = {
        "documents": len(flags),
        "inconsistent_documents": sum(1 for f in flags if f["inconsistencies"]),
        "flags": sum(by_axis.values()),
        "by_axis": dict(sorted(by_axis.items())),
        "by_field": dict(sorted(by_where.items())),
    }
    observed = _observed_value_flags(flags)
    if observed:  # only when a judge gave one, so other results keep their bytes
        out["observed_values"] = observed
    return out


def _judge_agreement(inputs: dict[str, Any]) -> dict[str, Any]:
    """The judge's agreement with the reviewers (and other judges) twice, per verdict field and
    pair: on the values re-derived from its observations (what is stored and analysed) and on
    its own verdicts as imported (``judge_as_imported``), so that a judge whose documents
    contradict themselves does not read as agreeing. ``{"judge_agreement": [{"field", "level",
    "pairs": [{"first", "second", "re_derived": {...}, "as_imported": {...}}]}]}``; empty when
    no judge document was imported. Each side is ``apps.raters.final.agreement_from_inputs``
    (Krippendorff's α, Cohen's κ, percent agreement, n)."""
    from apps.raters.final import agreement_from_inputs

    if not inputs.get("judge_as_imported") or not inputs.get("machine_agreement"):
        return {}
    derived = agreement_from_inputs(inputs["machine_agreement"])
    imported = {
        (e["field"], p["first"], p["second"]): p
        for e in agreement_from_inputs(inputs["judge_as_imported"])
        for p in e["pairs"]
    }
    out = []
    for entry in derived:
        pairs = []
        for pair in entry["pairs"]:
            own = imported.get((entry["field"], pair["first"], pair["second"]))
            strip = ("first", "second")
            pairs.append(
                {
                    "first": pair["first"],
                    "second": pair["second"],
                    "re_derived": {k: v for k, v in pair.items() if k not in strip},
                    "as_imported": {k: v for k, v in (own or {}).items() if k not in strip},
                }
            )
        out.append({"field": entry["field"], "level": entry["level"], "pairs": pairs})
    return {"judge_agreement": out}


def _observed_value_flags(flags: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each judge document's observed values no count of judged turns gives (or whose halves
    contradict the whole), by dialogue and JSON path, as the import flagged them."""
    return [
        {
            "position": document["position"],
            "attempt": document["attempt"],
            "scorer": document["scorer"],
            "path": item["path"],
            "axis": item["axis"],
            "message": item["message"],
        }
        for document in flags
        for item in document["inconsistencies"]
        if item.get("message")
    ]


def compute(
    inputs: dict[str, Any],
    *,
    parameters: dict[str, Any],
    seed: int,
    progress: Progress = no_progress,
) -> dict[str, Any]:
    """Fidelity, axis pass and drift rates with clustered intervals, loss1's distribution,
    collapse by card level and the judge's consistency (pure)."""
    plan = PlanReader(parameters)
    confidence = plan.number("interval_coverage", default=0.95)
    min_clusters = plan.integer("min_clusters", default=RATE_MIN_CLUSTERS_FLOOR)
    cluster = plan.choice("cluster_by", choices=("card", "dialogue"), default="card")
    plan.number("drift_epsilon", default=None)  # recorded: the raters applied it at scoring
    pooled = plan.choice("pooled_rates", choices=("true", "false"), default="false") == "true"
    rows = inputs["rows"]
    progress(20, "Fidelity and axis rates")
    fidelity = None
    axes, drift = {}, None
    # Rates are per evaluand (issue #36 §5); pooled over evaluands only where the plan asks.
    # With one evaluand the pooled rate is that evaluand's, so it is given as before.
    evaluands = len({row["evaluand"] for row in rows})
    if rows and (pooled or evaluands == 1):
        fidelity = _rate(rows, "fidelity", cluster, confidence, min_clusters)
        axes = {axis: _rate(rows, axis, cluster, confidence, min_clusters) for axis in AXES}
        drift = _rate(rows, "drift_flag", cluster, confidence, min_clusters)
    progress(60, "loss1 and collapse by card level")
    counts = Counter(round(r["loss1"], 1) for r in rows)
    loss1 = {
        "distribution": [{"loss1": v, "count": counts.get(v, 0)} for v in LOSS1_VALUES],
        "mean": (sum(r["loss1"] for r in rows) / len(rows)) if rows else None,
    }
    observed = Counter((r["card"],) for r in rows)
    return {
        "interval": {
            "method": f"{cluster}-clustered {CLUSTERED_METHOD if cluster == 'card' else METHOD}",
            "confidence": confidence,
        },
        "pooled_rates": pooled,
        "evaluands": evaluands,
        "fidelity": fidelity,
        "axes": axes,
        "drift": drift,
        "loss1": loss1,
        "collapse": {
            **_collapse(rows),
            **(_collapse_overall(rows, cluster, confidence, min_clusters) if rows else {}),
        },
        "by_evaluand": _by_evaluand(rows, cluster, confidence, min_clusters),
        "judge": _judge(inputs.get("judge_flags", [])),
        **_judge_agreement(inputs),
        "coverage": coverage_table(inputs["planned"], observed, ("card",)),
        "exclusions": exclusion_summary(inputs["exclusions"]),
        "counts": inputs["counts"],
        "settings": plan.settings(),
        "notes": [
            "B1 is a confound, off-spine: it is recorded with each card and never enters "
            "fidelity (seed 003, Verdict)."
        ],
    }


def tidy(inputs: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    header = [
        "position",
        "card",
        "evaluand",
        "fidelity",
        "loss1",
        "drift_flag",
        *(f"{a}_pass" for a in AXES),
        *(f"{a}_level" for a in (*AXES, "B1")),
    ]
    out = []
    for row in inputs["rows"]:
        out.append(
            [
                row["position"],
                row["card"],
                row["evaluand"],
                row["fidelity"],
                row["loss1"],
                row["drift_flag"],
                *(row[a] for a in AXES),
                *(row["levels"].get(a, "") for a in (*AXES, "B1")),
            ]
        )
    return header, out


def estimates_of(result: dict[str, Any]) -> dict[str, list[EstimateValue]]:
    def rate(part: dict[str, Any] | None) -> EstimateValue:
        if not part and result.get("by_evaluand"):
            return EstimateValue(
                None, "rates are per evaluand: the plan does not pool them (pooled_rates)"
            )
        if not part:
            return EstimateValue(None, "no dialogue has a verdict")
        return EstimateValue(float(part["rate"]))

    mean = (result.get("loss1") or {}).get("mean")
    return {
        "fidelity_rate": [rate(result.get("fidelity"))],
        "drift_rate": [rate(result.get("drift"))],
        "loss1_mean": [
            EstimateValue(float(mean))
            if mean is not None
            else EstimateValue(None, "no dialogue has a verdict")
        ],
        "judge_inconsistencies": [
            EstimateValue(float((result.get("judge") or {}).get("inconsistent_documents", 0)))
        ],
    }


FIDELITY_TEMPLATE = register_plan_template(
    PlanTemplate(
        code="fidelity",
        title="Injection fidelity (seed 003's judging rubric)",
        pipeline=KIND,
        parameters=(
            SCORES_PER_RESPONSE,
            "seed",
            "interval_coverage",
            "min_clusters",
            "cluster_by",
            "pooled_rates",
            "drift_epsilon",
            RESERVATION_MINUTES,
            AUDIT_COUNT,
            AUDIT_FRACTION,
            AUDIT_STRATA,
            replace(REPETITIONS, default="1"),
        ),
        # No drift ε is read unless the plan gives one (scoring refuses signals without it,
        # apps.raters.values); the preset starts a draft with the demo's 0.05.
        defaults={"interval_coverage": "0.95", "seed": "3", "drift_epsilon": "0.05"},
        reviewer_scored=True,
        outlines={
            "hypotheses": "### What the cards ask the user-simulator to enact\n",
            "design": "### PolicyCards (one per cell) and their axis levels\n\n"
            "### Dialogues\n\n### Judges (reviewers, LLM judge)\n",
            "analysis": "### Fidelity rate and its clusters\n\n### Per-axis pass rates, drift, "
            "loss1\n\n### Judge consistency and agreement\n",
        },
    )
)
