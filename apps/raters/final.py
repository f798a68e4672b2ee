"""Reads of machine scores: each response's final values by the rubric's final-value rule, and
the agreement of each scorer with the human reviewers and with the other scorers.

The final-value rule is per rubric field (``RubricField.final_rule``), frozen with the rubric:

| rule | the final value |
|---|---|
| ``reviewers`` | the reviewers' (``selectors.final_scores``: agreed, or adjudicated) |
| ``scorer`` | the scorer role's: one scorer's, or several's when equal (numbers: the mean) |
| ``reviewers_else_scorer`` | the reviewers' where they scored it, else the scorer role's |

Several scorers of one role that disagree on a field with no mean give no final value ("equal
or nothing"): the response is unresolved (``unresolved`` in its row), the computability gate
warns of such a rule before the freeze (``unresolvable_rules``) and the report counts and lists
the unresolved responses.

The analysis reads final values only through ``final_values`` (``apps.analysis.inputs``), in
which a scorer's epochs are combined by its frozen rule; agreement and judge validation read
each response's own machine value (``comparison_inputs`` says why).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db.models import Count

from apps.deviations.selectors import outcomes_visible
from apps.protocols.models import ProtocolVersion
from apps.raters.epochs import EACH, epochs_reduce
from apps.raters.models import (
    AuditSample,
    FieldKind,
    FinalValue,
    MachineScore,
    MachineScoreImport,
    OracleRun,
    RubricField,
    ScoredBy,
    ScorerRosterEntry,
)
from apps.raters.reliability import LEVEL_FOR_KIND, pair_agreement
from apps.raters.selectors import final_scores
from apps.raters.values import agreement_code
from apps.responses.models import Response

AWAITING_ADJUDICATION = "awaiting_adjudication"
HUMANS = "reviewers"


def _combine(kind: str, values: list[Any]) -> Any:
    if not values:
        return None
    if len({repr(v) for v in values}) == 1:
        return values[0]
    if kind in (FieldKind.NUMBER, FieldKind.COUNT):
        return round(sum(values) / len(values), 6)
    return None


def machine_values(
    version: ProtocolVersion, *, per_epoch: bool = False
) -> dict[int, dict[str, dict[str, Any]]]:
    """``{response_id: {scorer code: {field: value}}}`` of every machine score of ``version``,
    a scorer's epochs combined as its roster entry says (``epochs_combined``): the values the
    final values, and so every estimate, are taken from. With ``per_epoch`` each response keeps
    its own values, as imported: what a reviewer who read that response is compared with
    (``comparison_inputs``)."""
    roster = ScorerRosterEntry.objects.filter(version=version)
    codes = dict(roster.values_list("scorer_id", "code"))
    out: dict[int, dict[str, dict[str, Any]]] = defaultdict(lambda: defaultdict(dict))
    for response_id, scorer_id, field, value in (
        MachineScore.objects.filter(version_id=version.pk)
        .order_by("response_id", "scorer_id", "field")
        .values_list("response_id", "scorer_id", "field", "value")
        .iterator(chunk_size=5000)
    ):
        code = codes.get(scorer_id)
        if code is not None:
            out[response_id][code][field] = value
    rules = {code: rule for code, rule in roster.values_list("code", "epochs") if rule != EACH}
    if rules and not per_epoch:
        epochs_combined(version, out, rules)
    return out


def epochs_combined(
    version: ProtocolVersion, values: dict[int, dict[str, dict[str, Any]]], rules: dict[str, str]
) -> None:
    """Combine in place, for each scorer code in ``rules`` (code → rule, ``apps.raters.epochs``),
    its values of a field over the repetitions of one cell and evaluand (Inspect's epochs): the
    combined value stays on the group's first scored repetition, the others lose it."""
    groups: dict[tuple, list[tuple[int, int]]] = defaultdict(list)
    for response_id, cell_id, evaluand_id, repetition in Response.objects.filter(
        version_id=version.pk, pk__in=list(values)
    ).values_list(
        "pk",
        "attempt__administration__cell_id",
        "attempt__administration__evaluand_id",
        "attempt__administration__repetition",
    ):
        groups[(cell_id, evaluand_id)].append((repetition, response_id))
    for members in groups.values():
        ordered = [response_id for _, response_id in sorted(members)]
        for code, rule in rules.items():
            fields = {f for r in ordered for f in values[r].get(code, {})}
            for field in sorted(fields):
                scored = [r for r in ordered if values[r].get(code, {}).get(field) is not None]
                if not scored:
                    continue
                combined = epochs_reduce(rule, [values[r][code][field] for r in scored])
                values[scored[0]][code][field] = combined
                for r in scored[1:]:
                    del values[r][code][field]


def final_values(version: ProtocolVersion) -> list[dict[str, Any]]:
    """Per response with final values: ``final_scores``' row (``response_id``, ``originals``,
    ``disagreements``, ``adjudication``, ``status``, ``final``) with ``final`` taken field by
    field by the final-value rule, and, when machine scores exist, ``reviewers_final`` (the
    reviewers' own final values or None), ``machine`` (``{scorer code: {field: value}}``) and
    ``sources`` (``{field: "reviewers" | "scorer" | None}``).

    A response is listed when every field whose rule is ``reviewers`` can be read (its reviewer
    scores are complete and not awaiting adjudication) and it has some value. ``status`` is the
    reviewers' (agreed, adjudicated, awaiting_adjudication) or ``machine`` when only machine
    scores decide it. A version with no machine-scored field gives ``final_scores`` unchanged.
    """
    fields = list(RubricField.objects.filter(version=version).order_by("position"))
    if all(f.scored_by == ScoredBy.REVIEWERS for f in fields):
        return final_scores(version)
    roles = dict(ScorerRosterEntry.objects.filter(version=version).values_list("code", "role"))
    reviewer_rows = {row["response_id"]: row for row in final_scores(version)}
    machine = machine_values(version)
    needs_reviewers = any(f.final_rule == FinalValue.REVIEWERS for f in fields)
    rows = []
    for response_id in sorted(set(reviewer_rows) | set(machine)):
        row = reviewer_rows.get(response_id)
        if row is not None and row["status"] == AWAITING_ADJUDICATION:
            rows.append({**row, "reviewers_final": None, "machine": {}, "sources": {}})
            continue
        if row is None and needs_reviewers:
            continue
        by_scorer = machine.get(response_id, {})
        humans = row["final"] if row is not None else None
        final: dict[str, Any] = {}
        sources: dict[str, str | None] = {}
        unresolved: list[str] = []
        for field in fields:
            human = humans.get(field.name) if humans is not None else None
            scored = [
                values[field.name]
                for code, values in sorted(by_scorer.items())
                if roles.get(code) == field.scorer_role and field.name in values
            ]
            mechanical = _combine(field.kind, scored)
            rule = field.final_rule
            if rule == FinalValue.REVIEWERS or (
                rule == FinalValue.REVIEWERS_ELSE_SCORER and human is not None
            ):
                final[field.name], sources[field.name] = human, HUMANS if humans else None
            else:
                final[field.name] = mechanical
                sources[field.name] = "scorer" if scored else None
                if scored and mechanical is None:
                    unresolved.append(field.name)
        base = row or {
            "response_id": response_id,
            "originals": [],
            "disagreements": [],
            "adjudication": None,
            "status": "machine",
        }
        rows.append(
            {
                **base,
                "final": final,
                "reviewers_final": humans,
                "machine": {code: dict(values) for code, values in sorted(by_scorer.items())},
                "sources": sources,
                # Only when there is one, so a study whose scorers agree keeps its bytes.
                **({"unresolved": unresolved} if unresolved else {}),
            }
        )
    return rows


def unresolvable_rules(version: ProtocolVersion) -> list[str]:
    """The fields whose final-value rule can leave a response with no final value: the rule
    takes the scorer role's value (``scorer``, or ``reviewers_else_scorer`` where no reviewer
    scored), two or more scorers of the role are on the roster, and the field's kind has no
    mean (not a number or count), so scorers that disagree give nothing ("equal or nothing",
    ``_combine``). One sentence per field, for the computability gate's notes; empty when no
    field can."""
    codes: dict[str, list[str]] = defaultdict(list)
    for code, role in ScorerRosterEntry.objects.filter(version=version).values_list("code", "role"):
        codes[role].append(code)
    out = []
    for field in RubricField.objects.filter(version=version).order_by("position"):
        scorers = sorted(codes.get(field.scorer_role, []))
        if (
            field.scorer_scores
            and field.final_rule != FinalValue.REVIEWERS
            and len(scorers) > 1
            and field.kind not in (FieldKind.NUMBER, FieldKind.COUNT)
        ):
            where = " where no reviewer scored it" if field.reviewers_score else ""
            out.append(
                f"field {field.name!r} takes the {field.scorer_role!r} role's value{where}, "
                f"and its {len(scorers)} scorers ({', '.join(scorers)}) give a final value only "
                "when they agree: a response they disagree on is left unresolved, out of the "
                "estimates (the report counts and lists them); give the field one scorer, or "
                "the final value to the reviewers"
            )
    return out


@dataclass(frozen=True)
class ComparisonInputs:
    """What agreement and judge validation compare, read once: the machine-scored fields of an
    α-capable kind (rubric order), the roster's code → role, every response's machine values
    epoch by epoch (``machine_values(per_epoch=True)``) and the reviewers' rows
    (``final_scores``)."""

    fields: list[RubricField]
    roles: dict[str, str]
    machine: dict[int, dict[str, dict[str, Any]]]
    rows: list[dict[str, Any]]

    def scorers(
        self, field: RubricField, kept: set[int] | None = None
    ) -> dict[str, dict[str, float]]:
        """``{scorer code: {response id as text: code}}``: the values of ``field`` by the
        scorers of its role (of the responses in ``kept`` when given)."""
        out: dict[str, dict[str, float]] = defaultdict(dict)
        for response_id, by_scorer in self.machine.items():
            if kept is not None and response_id not in kept:
                continue
            for code, values in by_scorer.items():
                if self.roles.get(code) == field.scorer_role and values.get(field.name) is not None:
                    out[code][str(response_id)] = agreement_code(field, values[field.name])
        return out

    def final(self, field: RubricField, kept: set[int] | None = None) -> dict[str, float]:
        """``{response id as text: code}``: the reviewers' final values of ``field`` (agreed or
        adjudicated; none while awaiting adjudication)."""
        return {
            str(row["response_id"]): agreement_code(field, row["final"][field.name])
            for row in self.rows
            if (kept is None or row["response_id"] in kept)
            and row["status"] != AWAITING_ADJUDICATION
            and row["final"].get(field.name) is not None
        }


def comparison_inputs(version: ProtocolVersion) -> ComparisonInputs | None:
    """The shared reads of ``agreement_inputs`` and ``validation_inputs``; None when no field
    is machine-scored and of an α-capable kind.

    The unit compared is the response, each with the machine's value of that response as
    imported, epoch by epoch, whatever the scorer's ``epochs`` rule: a reviewer scores one
    response (one epoch's text), so the machine's verdict on the same text is what their value
    checks. A combined value (``epochs_combined``) summarises the scorer's verdicts on every
    epoch of a cell and evaluand; set against one epoch's human value it would count the
    epochs' own variation as the scorer's error (``at_least:2`` over a correct true and a
    correct false gives false, which a reviewer of the first epoch rightly calls true). The
    audit's strata (``audit_strata.response_strata``) are the same unit's, so the
    Horvitz–Thompson weights are the draw's inclusion probabilities of these responses.
    """
    fields = [
        f
        for f in RubricField.objects.filter(version=version).order_by("position")
        if f.scorer_scores and f.kind in LEVEL_FOR_KIND
    ]
    if not fields:
        return None
    return ComparisonInputs(
        fields=fields,
        roles=dict(ScorerRosterEntry.objects.filter(version=version).values_list("code", "role")),
        machine=machine_values(version, per_epoch=True),
        rows=final_scores(version),
    )


def agreement_inputs(version: ProtocolVersion) -> list[dict[str, Any]]:
    """For each machine-scored field (α-capable kinds), the coders' coded values per response:
    ``[{"field", "kind", "level", "categories", "coders": {code or "reviewers": {response key:
    code}}}]``; responses are keyed by ``response_key`` (a natural key when given). The
    reviewers' values are their final values (agreed or adjudicated); the machine's, each
    response's own (epoch by epoch, ``comparison_inputs``)."""
    read = comparison_inputs(version)
    if read is None:
        return []
    out = []
    for field in read.fields:
        coders = read.scorers(field)
        if final := read.final(field):
            coders[HUMANS] = final
        out.append(
            {
                "field": field.name,
                "kind": field.kind,
                "level": LEVEL_FOR_KIND[field.kind],
                "categories": len(field.choices)
                if field.kind == FieldKind.CATEGORICAL
                else (2 if field.kind == FieldKind.BINARY else None),
                "coders": {code: dict(sorted(v.items())) for code, v in sorted(coders.items())},
            }
        )
    return out


def agreement_from_inputs(inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per field, every scorer against the reviewers and every pair of scorers:
    ``[{"field", "level", "pairs": [{"first", "second", "n", "alpha", "percent_agreement",
    "kappa", "note"}]}]``. Pure (reads only ``inputs``), so the analysis computes the same from
    its input document."""
    out = []
    for entry in inputs:
        coders = entry["coders"]
        scorers = sorted(code for code in coders if code != HUMANS)
        pairs = [(code, HUMANS) for code in scorers if HUMANS in coders]
        pairs += [(a, b) for i, a in enumerate(scorers) for b in scorers[i + 1 :]]
        results = []
        for first, second in pairs:
            units = sorted(set(coders[first]) | set(coders[second]))
            a = [coders[first].get(u, float("nan")) for u in units]
            b = [coders[second].get(u, float("nan")) for u in units]
            agreement = pair_agreement(
                a,
                b,
                entry["level"],
                n_categories=entry["categories"] if entry["level"] == "nominal" else None,
            )
            results.append({"first": first, "second": second, **agreement.to_dict()})
        out.append({"field": entry["field"], "level": entry["level"], "pairs": results})
    return out


def _labels(field: RubricField) -> list[str] | None:
    if field.kind == FieldKind.BINARY:
        return ["false", "true"]  # agreement_code: False → 0, True → 1
    if field.kind in (FieldKind.CATEGORICAL, FieldKind.ORDINAL):
        return [str(c["value"]) for c in field.choices]
    return None


def validation_inputs(
    version: ProtocolVersion, weights: dict[int, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """What judge validation (issue 34 §5) is computed from: per machine-scored field of an
    α-capable kind with human values, ``{"field", "kind", "level", "labels", "scorers": {code:
    {response: code}}, "final": {response: code}, "reviewers": {username: {response: code}},
    "clusters": {response: item code}}``, plus ``"weights"`` and ``"strata"`` ({response:
    …}) when ``weights`` (``audit_strata.audit_weights``) is given: then only the audited
    responses are compared. Responses are keyed by their id as text, each with the machine's
    value of that response (epoch by epoch: ``comparison_inputs`` says why); empty when no
    field has both a machine and a human value."""
    read = comparison_inputs(version)
    if read is None:
        return []
    kept = None if weights is None else set(weights)
    out = []
    for field in read.fields:
        scorers = read.scorers(field, kept)
        final = read.final(field, kept)
        reviewers: dict[str, dict[str, float]] = defaultdict(dict)
        for row in read.rows:
            if kept is not None and row["response_id"] not in kept:
                continue
            for original in row["originals"]:
                if original["values"].get(field.name) is not None:
                    reviewers[original["reviewer"]][str(row["response_id"])] = agreement_code(
                        field, original["values"][field.name]
                    )
        if not scorers or not (final or reviewers):
            continue
        entry: dict[str, Any] = {
            "field": field.name,
            "kind": field.kind,
            "level": LEVEL_FOR_KIND[field.kind],
            "labels": _labels(field),
            "scorers": {code: dict(sorted(v.items())) for code, v in sorted(scorers.items())},
            "final": dict(sorted(final.items())),
            "reviewers": {r: dict(sorted(v.items())) for r, v in sorted(reviewers.items())},
        }
        if weights is not None:
            entry["weights"] = {str(pk): w["weight"] for pk, w in sorted(weights.items())}
            entry["strata"] = {str(pk): w["stratum"] for pk, w in sorted(weights.items())}
        out.append(entry)
    return out


# What later apps add to the machine-scoring dashboard once outcomes are unsealed (the analysis
# app registers judge validation, computed by its statistics): name → compute(version).
_dashboard_parts: dict[str, Callable[[ProtocolVersion], Any]] = {}


def register_dashboard_part(name: str, compute: Callable[[ProtocolVersion], Any]) -> None:
    """Add ``compute(version)``'s answer to ``machine_dashboard`` under ``name`` (None while the
    outcomes are sealed)."""
    _dashboard_parts[name] = compute


def machine_agreement(version: ProtocolVersion) -> list[dict[str, Any]]:
    """The PI's dashboard: ``agreement_from_inputs(agreement_inputs(version))``."""
    return agreement_from_inputs(agreement_inputs(version))


def scorer_roster(version: ProtocolVersion) -> list[dict[str, Any]]:
    """The version's scorer roster with each scorer's identity and its number of machine scores."""
    counts = dict(
        MachineScore.objects.filter(version_id=version.pk)
        .values_list("scorer_id")
        .annotate(n=Count("pk"))
    )
    return [
        {
            "code": entry.code,
            "role": entry.role,
            "label": entry.scorer.label,
            "kind": entry.scorer.kind,
            "identity_sha256": entry.scorer.identity_sha256,
            "identity": entry.scorer.identity(),
            "epochs": entry.epochs,
            "scores": counts.get(entry.scorer_id, 0),
        }
        for entry in ScorerRosterEntry.objects.filter(version=version)
        .select_related("scorer")
        .order_by("position", "code")
    ]


def machine_dashboard(version: ProtocolVersion) -> dict[str, Any]:
    """The PI's view of machine scoring: the scorer roster with counts, imports, oracle runs,
    the audit sample's size, and — once outcomes are unsealed — the agreement per field
    (``"agreement": None`` while sealed), and each registered part (``register_dashboard_part``;
    None while sealed)."""
    roster = scorer_roster(version)
    visible = bool(roster) and outcomes_visible(version)
    return {
        "scorers": roster,
        "imports": [
            {
                "filename": i.filename,
                "sha256": i.sha256,
                "format": i.format,
                "counts": i.counts,
                "imported_by": i.imported_by.get_username(),
                "imported_at": i.imported_at,
            }
            for i in MachineScoreImport.objects.filter(version=version).select_related(
                "imported_by"
            )
        ],
        "oracle_runs": [
            {
                "id": run.pk,
                "scorer": run.scorer.label,
                "state": run.state,
                "progress": run.progress,
                "message": run.message,
                "counts": run.counts,
            }
            for run in OracleRun.objects.filter(version=version).select_related("scorer")
        ],
        "audit_sample": AuditSample.objects.filter(version=version).count(),
        "agreement": machine_agreement(version) if visible else None,
        **{
            name: compute(version) if visible else None
            for name, compute in _dashboard_parts.items()
        },
    }
