"""Every read the analysis makes of other apps' data, in one module.

The pipelines' ``collect`` steps call only these functions, and these return plain Python data
(dicts, lists, strings, numbers) keyed by natural keys — item codes, level ordinals, evaluand
codes, administration positions, reviewer usernames — never database ids, so that the same data
gives the same canonical input document and hash wherever it lives.

Temporary, until the owning apps' selectors land on main (switching is an edit here only):
- ``final_values``: per response, the agreed or adjudicated values. The raters app's
  ``final_scores(version)`` will replace it; until then the rule is written out below.
- The roster code of an evaluand is read from ``RosterEntry`` (falling back to its label).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from apps.items.models import Cell, Condition, Family, Item, KeyUnit, Level
from apps.protocols.models import ProtocolVersion
from apps.raters.models import RubricField, Score, TaskKind
from apps.responses.models import (
    Administration,
    Attempt,
    Exclusion,
    RosterEntry,
    TerminalOutcome,
)

# How a response's final values came about (``final_values``).
AGREED = "agreed"  # every primary score gave the same values
ADJUDICATED = "adjudicated"  # a third reviewer's adjudication decides
SINGLE = "single"  # one primary score only
COMBINED = "combined"  # primaries differ; numbers averaged, other differences left as None
UNSCORED = "unscored"


def plan_parameters(version: ProtocolVersion) -> dict[str, str]:
    """The plan's parameters as written (name → value text), in name order."""
    return dict(version.parameters.order_by("name").values_list("name", "value"))


def plan_decision_table(version: ProtocolVersion) -> list:
    """The decision table stored with the version (may be empty: the pipeline's default then)."""
    return list(version.decision_table or [])


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
    items = [
        {
            "code": item.code,
            "family": item.family.code,
            "domain": item.domain,
            "condition": item.condition.code if item.condition_id else "",
        }
        for item in Item.objects.filter(version=version)
        .select_related("family", "condition")
        .order_by("code")
    ]
    units: dict[int, list[dict]] = defaultdict(list)
    for unit in KeyUnit.objects.filter(version=version).order_by("cell_id", "position"):
        units[unit.cell_id].append({"position": unit.position, "executable": unit.executable})
    cells = [
        {
            "item": cell.item.code,
            "level": cell.level.ordinal,
            "absent": cell.absent,
            "absent_reason": cell.absent_reason,
            "key_units": units.get(cell.pk, []),
        }
        for cell in Cell.objects.filter(version=version)
        .select_related("item", "level")
        .order_by("item__code", "level__ordinal")
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


def _final_values(scores: list[dict]) -> tuple[dict | None, str]:
    """The response's final values from its scores (temporary; see the module docstring).

    Corrections replace the score they correct. An adjudication decides. Otherwise primaries
    that agree give their values; primaries that differ give, per field, the mean for numbers
    and None for anything else (the pipeline decides what an unresolved field means).
    """
    corrected = {s["corrects_id"] for s in scores if s["corrects_id"]}
    effective = [s for s in scores if s["pk"] not in corrected]
    adjudications = [s for s in effective if s["task__kind"] == TaskKind.ADJUDICATION]
    if adjudications:
        return dict(max(adjudications, key=lambda s: s["pk"])["values"]), ADJUDICATED
    primaries = [s for s in effective if s["task__kind"] == TaskKind.PRIMARY]
    if not primaries:
        return None, UNSCORED
    if len(primaries) == 1:
        return dict(primaries[0]["values"]), SINGLE
    names = sorted({name for s in primaries for name in s["values"]})
    merged: dict[str, Any] = {}
    agreed = True
    for name in names:
        values = [s["values"].get(name) for s in primaries]
        if all(v == values[0] for v in values):
            merged[name] = values[0]
            continue
        agreed = False
        numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
        merged[name] = sum(values) / len(values) if numeric else None
    return merged, AGREED if agreed else COMBINED


def _primary_scores(scores: list[dict]) -> list[dict[str, Any]]:
    corrected = {s["corrects_id"] for s in scores if s["corrects_id"]}
    return sorted(
        (
            {"rater": s["reviewer__username"], "values": dict(s["values"])}
            for s in scores
            if s["pk"] not in corrected and s["task__kind"] == TaskKind.PRIMARY
        ),
        key=lambda r: r["rater"],
    )


def observations(version: ProtocolVersion) -> dict[str, Any]:
    """What was administered, answered, excluded and scored, one entry per administration.

    For each administration of the schedule, the observation is the response of its last
    attempt that has one (earlier responses were superseded by a rerun and are only counted).
    Returns ``{"administrations": [...], "counts": {...}}`` where each administration is
    ``{"position", "item", "level", "evaluand", "repetition", "status", ...}`` and status is
    one of ``no_response``, ``excluded``, ``unscored`` or ``scored``; scored ones carry
    ``final`` (values), ``final_method`` and ``scores`` (the primary scores per rater).

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
    scores_by_response: dict[int, list[dict]] = defaultdict(list)
    for score in (
        Score.objects.filter(version=version)
        .order_by("response_id", "pk")
        .values("pk", "response_id", "corrects_id", "task__kind", "reviewer__username", "values")
    ):
        scores_by_response[score["response_id"]].append(score)

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
        answered = [
            a
            for a in attempts_by_administration.get(administration["pk"], [])
            if a["response__pk"] is not None
        ]
        if not answered:
            entry["status"] = "no_response"
            out.append(entry)
            continue
        superseded += len(answered) - 1
        attempt = answered[-1]
        entry.update(
            attempt=attempt["number"],
            terminal_outcome=attempt["terminal_outcome"],
            word_count=attempt["response__word_count"],
        )
        exclusion = exclusions.get(attempt["pk"])
        if exclusion is not None:
            entry.update(
                status="excluded",
                reason_code=exclusion["reason_code"],
                outcome_visible=exclusion["outcome_visible"],
            )
            out.append(entry)
            continue
        scores = scores_by_response.get(attempt["response__pk"], [])
        final, method = _final_values(scores)
        if final is None:
            entry["status"] = "unscored"
        else:
            entry.update(
                status="scored",
                final=final,
                final_method=method,
                scores=_primary_scores(scores),
            )
        out.append(entry)

    statuses = defaultdict(int)
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
    return {"administrations": out, "counts": counts}
