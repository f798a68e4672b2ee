"""Every read the analysis makes of other apps' data, in one module.

The pipelines' ``collect`` steps call only these functions, and these return plain Python data
(dicts, lists, strings, numbers) keyed by natural keys — item codes, level ordinals, evaluand
codes, administration positions, reviewer usernames — never database ids, so that the same data
gives the same canonical input document and hash wherever it lives.

A response's final values are the raters app's ``final_values(version)``: per rubric field by
the rubric's final-value rule — the reviewers' (the k primary scores, agreed within the plan's
disagreement rule or adjudicated), a machine scorer's, or the reviewers' where present and the
scorer's otherwise. A response with fewer than k primaries where the reviewers' values are
needed, or one awaiting adjudication, is ``unscored`` here; one awaiting adjudication still
carries its primary scores, because reliability is computed over every doubly-scored unit
with its pre-adjudication values (docs/analysis.md, "Which values enter α"). The roster code
of an evaluand is read from ``RosterEntry`` (falling back to its label).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from apps.analysis.pipelines.base import RecordTerms, registered_pipelines
from apps.items.models import Cell, Condition, Family, Item, KeyUnit, Level, PanelFlag
from apps.protocols.models import ProtocolVersion
from apps.raters.audit_strata import audit_weights
from apps.raters.final import agreement_inputs, final_values, validation_inputs
from apps.raters.models import RubricField
from apps.raters.plan import rating_plan
from apps.raters.selectors import partial_primary_scores
from apps.responses.models import (
    Administration,
    Attempt,
    Exclusion,
    RosterEntry,
    SessionColumns,
    TerminalOutcome,
    analysed_attempt,
    crossed_evidence_gate,
)
from apps.responses.sessions import SESSION_FIELDS

AWAITING_ADJUDICATION = "awaiting_adjudication"
PARTIALLY_SCORED = "partially_scored"


def plan_parameters(version: ProtocolVersion) -> dict[str, str]:
    """The plan's parameters as written (name → value text), in name order."""
    return dict(version.parameters.order_by("name").values_list("name", "value"))


def plan_decision_table(version: ProtocolVersion) -> list:
    """The decision table stored with the version (may be empty: the pipeline's default then)."""
    return list(version.decision_table or [])


def raw(version: ProtocolVersion) -> dict[str, Any]:
    """Everything a pipeline's ``assemble`` may read: the design, the observations, the rubric's
    fields and the decision table. The freeze gate builds the same shape from a draft with
    synthetic observations (``apps/analysis/computability.py``)."""
    out = {
        "design": design(version),
        "observations": observations(version),
        "rubric_fields": rubric_fields(version),
        "decision_table": plan_decision_table(version),
        "control_validations": control_validations(version),
    }
    panel = panel_flags(version)
    if panel:  # only when a panel recorded flags, so other inputs keep their bytes
        out["panel"] = panel
    out["session_guarantees"] = session_guarantees(version)
    return out


def session_guarantees(version: ProtocolVersion) -> dict[str, dict[str, str]]:
    """OPB-01 §6.3 per enrolled evaluand (by roster code): its fresh-session guarantee (yes, no
    or unknown — unknown when none was recorded) and the note."""
    out = {}
    for entry in RosterEntry.objects.filter(version=version).select_related(
        "evaluand__session_guarantee"
    ):
        record = getattr(entry.evaluand, "session_guarantee", None)
        out[entry.code] = {
            "fresh_session": record.fresh_session if record else "unknown",
            "note": record.note if record else "",
        }
    return out


def panel_flags(version: ProtocolVersion) -> list[dict[str, Any]]:
    """OPB-01 §6.1's panel flags: one ``{"member", "item", "flagged"}`` per member × item."""
    return [
        {"member": member, "item": item, "flagged": bool(flagged)}
        for member, item, flagged in PanelFlag.objects.filter(version=version)
        .order_by("member__code", "item__code")
        .values_list("member__code", "item__code", "flagged")
    ]


def control_validations(version: ProtocolVersion) -> list[dict[str, Any]]:
    """The execution environments' control validations (CRUCIBLE §7), oldest first."""
    from apps.responses.models import ControlValidation

    return [
        {"environment": environment, "result": result}
        for environment, result in ControlValidation.objects.filter(version=version)
        .order_by("recorded_at", "pk")
        .values_list("environment", "result")
    ]


def design(version: ProtocolVersion) -> dict[str, Any]:
    """The version's design: levels, families, conditions, items and cells with key sizes."""
    levels = [
        {"ordinal": lv.ordinal, "code": lv.code, "name": lv.name}
        for lv in Level.objects.filter(version=version).order_by("ordinal")
    ]
    families = [
        {"code": f.code, "name": f.name, "role": f.role, "max_level": f.max_level}
        for f in Family.objects.filter(version=version).order_by("code")
    ]
    conditions = [
        {"code": c.code, "name": c.name, "is_sham": c.is_sham}
        for c in Condition.objects.filter(version=version).order_by("code")
    ]
    # Plain rows, not model instances: a 12,500-item design is read in a fraction of the time
    # (the computability gate reads it on every check, issue #32), with the same output.
    items = [
        {
            "code": code,
            "family": family,
            "domain": domain,
            "condition": condition or "",
            # Only when linked (OPB-01 §5), so inputs without links keep their bytes.
            **({"base_item": base} if base is not None else {}),
        }
        for code, family, domain, condition, base in Item.objects.filter(version=version)
        .order_by("code")
        .values_list("code", "family__code", "domain", "condition__code", "base_item__code")
    ]
    units: dict[int, list[dict]] = defaultdict(list)
    for cell_id, position, executable in (
        KeyUnit.objects.filter(version=version)
        .order_by("cell_id", "position")
        .values_list("cell_id", "position", "executable")
    ):
        units[cell_id].append({"position": position, "executable": executable})
    cells = [
        {
            "item": item,
            "level": level,
            "absent": absent,
            "absent_reason": reason,
            "key_units": units.get(pk, []),
        }
        for pk, item, level, absent, reason in Cell.objects.filter(version=version)
        .order_by("item__code", "level__ordinal")
        .values_list("pk", "item__code", "level__ordinal", "absent", "absent_reason")
    ]
    return {
        "levels": levels,
        "families": families,
        "conditions": conditions,
        "items": items,
        "cells": cells,
    }


def rubric_fields(version: ProtocolVersion) -> list[dict[str, Any]]:
    """The rubric's fields in order: name, kind and (for categorical/ordinal) the choice values."""
    return [
        {
            "name": f.name,
            "kind": f.kind,
            "choices": [c["value"] if isinstance(c, dict) else c for c in f.choices or []],
        }
        for f in RubricField.objects.filter(version=version).order_by("position")
    ]


def _evaluand_codes(version: ProtocolVersion) -> dict[int, str]:
    return dict(RosterEntry.objects.filter(version=version).values_list("evaluand_id", "code"))


def _rater_rows(originals: list[dict]) -> list[dict[str, Any]]:
    return sorted(
        ({"rater": o["reviewer"], "values": dict(o["values"])} for o in originals),
        key=lambda r: r["rater"],
    )


def _record_readers() -> list[RecordTerms]:
    return [p.record_terms for p in registered_pipelines() if p.record_terms is not None]


def _attempt_terms(
    attempt: Mapping[str, Any],
    exclusions: dict,
    finals: dict,
    pending: dict,
    readers: list[RecordTerms],
) -> dict[str, Any]:
    """What one gate-crossing attempt was: its number, outcome, record terms and status."""
    terms: dict[str, Any] = {
        "attempt": attempt["number"],
        "terminal_outcome": attempt["terminal_outcome"],
        "word_count": attempt["response__word_count"],
    }
    if attempt["raw__environment"]:
        # The execution environment the harness names (CRUCIBLE §7); absent for most
        # studies, whose input documents therefore do not change.
        terms["environment"] = str(attempt["raw__environment"])
    # What the episode used of its frozen budgets and the safety stop it names (CRUCIBLE
    # §8), only when the record states them, so other studies' inputs keep their bytes.
    for reader in readers:
        terms.update(reader.terms({name: attempt[f"raw__{name}"] for name in reader.fields}))
    exclusion = exclusions.get(attempt["pk"])
    if exclusion is not None:
        terms.update(
            status="excluded",
            reason_code=exclusion["reason_code"],
            outcome_visible=exclusion["outcome_visible"],
        )
        return terms
    if attempt["response__pk"] is None:
        # An eligible episode that ended without a response (error, timeout, safety
        # stop…): its outcome stands; a rerun is another attempt beside it (§10).
        terms["status"] = "no_response"
        return terms
    final = finals.get(attempt["response__pk"])
    waiting = pending.get(attempt["response__pk"])
    if waiting is not None:
        state = (
            "partially_scored" if waiting["status"] == PARTIALLY_SCORED else AWAITING_ADJUDICATION
        )
        terms.update({"status": "unscored", state: True})
        terms["scores"] = _rater_rows(waiting["originals"])
    elif final is None:
        terms["status"] = "unscored"
    else:
        terms.update(
            status="scored",
            final=final["final"],
            final_method=final["status"],
            scores=_rater_rows(final["originals"]),
        )
        if final.get("machine"):
            terms.update(machine=final["machine"], sources=final["sources"])
    return terms


def observations(version: ProtocolVersion) -> dict[str, Any]:
    """What was administered, answered, excluded and scored, one entry per administration.

    For each administration of the schedule, the observation is its first attempt that crossed
    the execution-evidence gate, with its declared outcome (CRUCIBLE §4, §10): a rerun after it
    is recorded and counted (``superseded_responses``) but never replaces it, and attempts
    that never crossed the gate (platform losses) are counted apart (their numbers in
    ``platform_loss_attempts`` when there are any). Every later attempt that crossed the gate
    too is listed in ``reruns`` (when there is one), each with the same attempt terms
    (``attempt``, ``terminal_outcome``, ``status``, ``final``…), for a pipeline whose frozen
    rule counts reruns (crucible, CRUCIBLE §10).
    Returns ``{"administrations": [...], "counts": {...}}`` where each administration is
    ``{"position", "item", "level", "evaluand", "repetition", "status", ...}`` and status is
    one of ``no_response``, ``excluded``, ``unscored`` or ``scored``; scored ones carry
    ``final`` (values), ``final_method`` and ``scores`` (the primary scores per rater). An
    unscored one whose k primaries disagree and await adjudication carries
    ``awaiting_adjudication: true`` and its ``scores`` (the pre-adjudication values reliability
    is computed from), and ``counts["awaiting_adjudication"]`` counts them (present when > 0);
    one with at least two of its k > 2 primaries so far carries ``partially_scored: true`` and
    its ``scores`` the same way.

    Reads with ``values()`` (a handful of queries, no model instances): a study has thousands
    of administrations and scores.
    """
    codes = _evaluand_codes(version)
    administrations = list(
        Administration.objects.filter(version=version)
        .order_by("position")
        .values(
            "pk",
            "position",
            "repetition",
            "evaluand_id",
            "evaluand__label",
            "cell__item__code",
            "cell__level__ordinal",
        )
    )
    # What the kinds read of each attempt's raw record beyond its outcome (Pipeline.record_terms).
    readers = _record_readers()
    record_fields = list(dict.fromkeys(name for reader in readers for name in reader.fields))
    attempts_by_administration: dict[int, list[dict]] = defaultdict(list)
    platform_losses = 0
    for attempt in (
        Attempt.objects.filter(version=version)
        .order_by("administration_id", "number")
        .values(
            "pk",
            "administration_id",
            "number",
            "terminal_outcome",
            "evidence_gate",
            "raw__environment",
            *(f"raw__{name}" for name in record_fields),
            "response__pk",
            "response__word_count",
        )
    ):
        attempts_by_administration[attempt["administration_id"]].append(attempt)
        platform_losses += attempt["terminal_outcome"] == TerminalOutcome.PLATFORM_LOSS
    exclusions = {
        e["attempt_id"]: e
        for e in Exclusion.objects.filter(version=version).values(
            "attempt_id", "reason_code", "outcome_visible"
        )
    }
    # The raters' rule decides what a response's final values are (k primaries, the plan's
    # disagreement rule, adjudication, the final-value rule for machine-scored fields); the
    # analysis never re-derives it. A response awaiting adjudication has no final value yet,
    # but its primary scores are pairable values that reliability must count (Krippendorff
    # 2011: every pairable value enters α), so they are kept apart.
    finals, pending = {}, {}
    for row in final_values(version):
        if row["status"] == AWAITING_ADJUDICATION:
            pending[row["response_id"]] = row
        else:
            finals[row["response_id"]] = row
    # With k > 2, a response two or more of whose k primaries have scored is doubly scored too.
    for row in partial_primary_scores(version):
        pending.setdefault(row["response_id"], {**row, "status": PARTIALLY_SCORED})

    out = []
    superseded = 0
    for administration in administrations:
        entry: dict[str, Any] = {
            "position": administration["position"],
            "item": administration["cell__item__code"],
            "level": administration["cell__level__ordinal"],
            "evaluand": codes.get(administration["evaluand_id"], administration["evaluand__label"]),
            "repetition": administration["repetition"],
        }
        attempts = attempts_by_administration.get(administration["pk"], [])
        lost = [
            a["number"]
            for a in attempts
            if not crossed_evidence_gate(a["evidence_gate"], a["terminal_outcome"])
        ]
        if lost:  # only then, so inputs of studies without platform losses keep their bytes
            entry["platform_loss_attempts"] = lost
        attempt = analysed_attempt(attempts)
        if attempt is None:
            entry["status"] = "no_response"
            out.append(entry)
            continue
        superseded += sum(
            1 for a in attempts if a["response__pk"] is not None and a["number"] > attempt["number"]
        )
        entry.update(_attempt_terms(attempt, exclusions, finals, pending, readers))
        # Every later attempt that crossed the gate too (CRUCIBLE §10: a rerun is another
        # recorded attempt and does not erase the original); which of them a pipeline counts
        # is its frozen rule's (crucible's ``rerun_rule``). Present only when there is one.
        reruns = [
            _attempt_terms(a, exclusions, finals, pending, readers)
            for a in attempts
            if a["number"] > attempt["number"]
            and crossed_evidence_gate(a["evidence_gate"], a["terminal_outcome"])
        ]
        if reruns:
            entry["reruns"] = reruns
        out.append(entry)

    statuses: defaultdict[str, int] = defaultdict(int)
    for entry in out:
        statuses[entry["status"]] += 1
    counts = {
        "administrations": len(out),
        "no_response": statuses["no_response"],
        "excluded": statuses["excluded"],
        "unscored": statuses["unscored"],
        "scored": statuses["scored"],
        "superseded_responses": superseded,
        "platform_loss_attempts": platform_losses,
    }
    awaiting = sum(1 for entry in out if entry.get("awaiting_adjudication"))
    if awaiting:  # only then, so inputs of studies with nothing pending keep their bytes
        counts["awaiting_adjudication"] = awaiting
    return {"administrations": out, "counts": counts}


def unresolved_finals(version: ProtocolVersion) -> list[dict[str, Any]]:
    """The responses whose final-value rule left a field with no value because its scorers
    disagree (``apps.raters.final.unresolvable_rules``): ``[{"response": "12.1", "fields":
    [...]}]``, each named by its administration's position and attempt number, in that order;
    empty when there is none."""
    rows = [row for row in final_values(version) if row.get("unresolved")]
    if not rows:
        return []
    keys = {
        pk: (position, number)
        for pk, position, number in Attempt.objects.filter(
            version=version, response__in=[row["response_id"] for row in rows]
        ).values_list("response__pk", "administration__position", "number")
    }
    return [
        {"response": "{}.{}".format(*keys[row["response_id"]]), "fields": row["unresolved"]}
        for row in sorted(rows, key=lambda row: keys[row["response_id"]])
    ]


def machine_agreement_inputs(version: ProtocolVersion) -> list[dict[str, Any]]:
    """What the agreement of machine scorers with the reviewers is computed from (empty when no
    field is machine-scored): ``apps.raters.final.agreement_inputs`` with each response named
    by its administration's position and attempt number (``"12.1"``), not its database id."""
    inputs = agreement_inputs(version)
    if not inputs:
        return []
    keys = {
        str(pk): f"{position}.{number}"
        for pk, position, number in Attempt.objects.filter(
            version=version, response__isnull=False
        ).values_list("response__pk", "administration__position", "number")
    }
    for entry in inputs:
        entry["coders"] = {
            coder: dict(sorted((keys[k], v) for k, v in values.items()))
            for coder, values in entry["coders"].items()
        }
    return inputs


def judge_validation_inputs(version: ProtocolVersion) -> list[dict[str, Any]]:
    """What judge validation is computed from (``apps.raters.final.validation_inputs``; empty
    when no machine-scored field has human values), each response named by its
    administration's position and attempt number (``"12.1"``) and its cluster by its item's
    code. With a stratified audit in the plan (``audit_strata``) only the audited responses
    are compared, each with its stratum and Horvitz–Thompson weight."""
    strata = rating_plan(version).audit_strata
    weights = audit_weights(version, strata) if strata is not None else None
    inputs = validation_inputs(version, weights)
    if not inputs:
        return []
    keys: dict[str, str] = {}
    items: dict[str, str] = {}
    for pk, position, number, item in Attempt.objects.filter(
        version=version, response__isnull=False
    ).values_list(
        "response__pk", "administration__position", "number", "administration__cell__item__code"
    ):
        keys[str(pk)] = f"{position}.{number}"
        items[keys[str(pk)]] = item

    def renamed(values: dict[str, Any]) -> dict[str, Any]:
        return dict(sorted((keys[k], v) for k, v in values.items()))

    for entry in inputs:
        entry["scorers"] = {code: renamed(v) for code, v in entry["scorers"].items()}
        entry["final"] = renamed(entry["final"])
        entry["reviewers"] = {name: renamed(v) for name, v in entry["reviewers"].items()}
        for part in ("weights", "strata"):
            if part in entry:
                entry[part] = renamed(entry[part])
        used = set(entry["final"]).union(*entry["scorers"].values(), *entry["reviewers"].values())
        entry["clusters"] = {k: items[k] for k in sorted(used)}
    return inputs


def task_blocks(version: ProtocolVersion) -> dict[str, Any]:
    """What a factorial, task-block design adds to the raw reads (seed 002, ``paired_blocks``).

    Returns ``{"factors": [{"name", "levels", "role"}], "administrations": [...]}``, one
    administration per schedule entry, keyed by natural keys (``item``, ``level`` ordinal,
    ``evaluand``, ``repetition``) with its factor ``assignment``, the analysed attempt's
    ``terminal_outcome`` and its stored session ``columns`` (``SessionColumns``, written by the
    importer: the typed columns and infrastructure-failure stratum, the keys of
    ``SessionRecord.stored()``); both None when nothing was attempted, and ``missing_columns``
    true for an attempt that has none stored (imported before they were; ``manage.py
    backfill_session_columns``). The verbatim archive is not read. The analysed attempt is the
    one ``observations`` scores: the first that crossed the execution-evidence gate, else (a
    platform loss) the last.
    """
    from apps.items.models import Factor

    codes = _evaluand_codes(version)
    by_administration: dict[int, list[Mapping[str, Any]]] = {}
    for row in (
        Attempt.objects.filter(version=version)
        .order_by("administration_id", "number")
        .values("pk", "administration_id", "terminal_outcome", "evidence_gate")
    ):
        by_administration.setdefault(row["administration_id"], []).append(row)
    # administration → its analysed attempt (without its record); a platform loss, its last.
    chosen = {
        pk: analysed_attempt(attempts) or attempts[-1] for pk, attempts in by_administration.items()
    }
    # Only the analysed attempts' columns are read, in chunks that stay under SQLite's limit on
    # query parameters.
    wanted = [a["pk"] for a in chosen.values()]
    columns: dict[int, dict] = {}
    for start in range(0, len(wanted), 10_000):
        chunk = wanted[start : start + 10_000]
        for row in SessionColumns.objects.filter(attempt_id__in=chunk).values(
            "attempt_id", *SESSION_FIELDS
        ):
            columns[row.pop("attempt_id")] = row
    rows = []
    for a in (
        Administration.objects.filter(version=version)
        .order_by("position")
        .values(
            "pk",
            "repetition",
            "assignment",
            "evaluand_id",
            "evaluand__label",
            "cell__item__code",
            "cell__level__ordinal",
        )
    ):
        attempt = chosen.get(a["pk"])
        rows.append(
            {
                "item": a["cell__item__code"],
                "level": a["cell__level__ordinal"],
                "evaluand": codes.get(a["evaluand_id"], a["evaluand__label"]),
                "repetition": a["repetition"],
                "assignment": dict(a["assignment"] or {}),
                "terminal_outcome": attempt["terminal_outcome"] if attempt else None,
                "columns": columns.get(attempt["pk"]) if attempt else None,
                "missing_columns": attempt is not None and attempt["pk"] not in columns,
            }
        )
    factors = [
        {"name": f.name, "levels": list(f.levels), "role": f.role}
        for f in Factor.objects.filter(version=version).order_by("name")
    ]
    return {"factors": factors, "administrations": rows}
