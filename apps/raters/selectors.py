"""Reads of blind rating: what a reviewer may see of a task, progress, final scores, reliability.

What a reviewer sees is built here and only here (``task_content``): the cell's prompt, the
response text, the key units when the rubric has a checklist, and the rubric's typed fields.
Nothing about family, level, condition, evaluand, protocol or other reviewers' scores is read.
"""

import itertools
import json
import statistics
from collections import defaultdict
from collections.abc import Iterator, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, TypedDict

from django.core.exceptions import ValidationError
from django.db.models import Case, Count, Exists, OuterRef, Q, QuerySet, Value, When
from django.urls import reverse
from rest_framework.authtoken.models import Token

from apps.accounts.models import Membership, Role, User
from apps.core.errors import NotFound
from apps.deviations.selectors import outcomes_visible
from apps.items.models import Cell, Condition, KeyUnit
from apps.protocols.components import Problem
from apps.protocols.models import ProtocolVersion, Withdrawal
from apps.protocols.parameters import decimal_text
from apps.raters.epochs import EACH, epochs_fit
from apps.raters.frozen import frozen_rating, shown_field
from apps.raters.judged import judged_signals, judged_signals_or_none
from apps.raters.models import (
    HOLDS_RESPONSE,
    Assignment,
    AssignmentOutcome,
    AuditSample,
    FieldKind,
    Rubric,
    RubricField,
    RubricPublication,
    RubricText,
    Score,
    ScoredBy,
    ScorerKind,
    ScorerRosterEntry,
    ScoringClosing,
    ScoringOpening,
    ScoringTask,
    SkipReason,
    StudyQueue,
    TaskKind,
    TaskState,
)
from apps.raters.plan import rating_plan
from apps.raters.reliability import LEVEL_FOR_KIND, krippendorff_alpha
from apps.raters.rubric_templates import rubric_template
from apps.raters.values import agreement_code, reviewer_fields, values_disagree
from apps.responses.models import Exclusion, Response

NO_SUCH_TASK = "No such task."

ROLE_REMOVED = (
    "You are no longer a reviewer on this protocol: your reservation has ended and your score "
    "was not stored."
)
VERSION_WITHDRAWN = (
    "This version was withdrawn: its scoring is closed and your score was not stored."
)
SCORING_CLOSED = (
    "Scoring of this version was closed (an amendment superseded it): your reservation has "
    "ended and your score was not stored."
)


def queue_versions(
    *, reviewer: User, version: ProtocolVersion | None = None, queue: str | None = None
) -> QuerySet[ProtocolVersion]:
    """The versions a reviewer's queue draws from: scoring open, the reviewer role held, not
    withdrawn; ``version`` narrows it to one, ``queue`` (a ``StudyQueue.token``) to one study."""
    versions = ProtocolVersion.objects.filter(
        scoring_opening__isnull=False,
        scoring_closing__isnull=True,
        withdrawal__isnull=True,
        protocol__memberships__user=reviewer,
        protocol__memberships__role=Role.REVIEWER,
    )
    if version is not None:
        versions = versions.filter(pk=version.pk)
    if queue is not None:
        versions = versions.filter(protocol__study_queue__token=queue)
    return versions.distinct().order_by("pk")


def task_for_reviewer(*, token: str, reviewer: User) -> tuple[ScoringTask, Assignment]:
    """The task behind ``token`` and the reviewer's latest reservation of it.

    Raises NotFound (a 404) with one generic message for unknown tokens and for tasks the
    reviewer never held, so a guessed or foreign token tells nothing.
    """
    task = ScoringTask.objects.select_related("response").filter(token=token).first()
    if task is None or not reviewer.is_authenticated:
        raise NotFound(NO_SUCH_TASK)
    assignment = (
        Assignment.objects.filter(task=task, reviewer=reviewer).order_by("-reserved_at").first()
    )
    if assignment is None:
        raise NotFound(NO_SUCH_TASK)
    return task, assignment


def task_content(task: ScoringTask) -> dict[str, Any]:
    """Everything a reviewer is shown for a task, and nothing else.

    ``{"prompt", "response", "instructions", "key_units": [{"position", "text"}],
    "fields": [{"name", "label", "kind", "choices", "required", "minimum", "maximum", "group",
    "help_text"}]}``. Derived fields are left out: they are computed, never typed. The rubric
    comes from the per-process cache of frozen versions (``apps.raters.frozen``); the prompt
    and text from the claim that reserved the task when it read them (``task.shown``).
    """
    shown = getattr(task, "shown", None)
    if shown is None:
        row = (
            Response.objects.filter(pk=task.response_id)
            .values(
                "text",
                "attempt__administration__cell__prompt",
                "attempt__administration__cell_id",
                "version__sha256",
            )
            .get()
        )
        prompt, text = row["attempt__administration__cell__prompt"], row["text"]
        cell_id, sha256 = row["attempt__administration__cell_id"], row["version__sha256"]
    else:
        prompt, text, cell_id, sha256 = shown.prompt, shown.text, shown.cell_id, shown.sha256
    rating = frozen_rating(version_id=task.version_id, sha256=sha256)
    all_fields = list(rating.fields)
    all_fields = reviewer_fields(all_fields, audited=response_is_audited(task, all_fields))
    fields = [f for f in all_fields if not f.derivation]
    has_checklist = any(f.kind == FieldKind.CHECKLIST for f in fields)
    units = (
        [
            {"position": u.position, "text": u.text}
            for u in KeyUnit.objects.filter(cell_id=cell_id).order_by("position")
        ]
        if has_checklist
        else []
    )
    content: dict[str, Any] = {
        "prompt": prompt,
        "response": text,
        "instructions": rating.instructions,
        "key_units": units,
        # The frozen rating's description of every typed field, when no field is left out here
        # (the common case: no field is a scorer's); built anew otherwise.
        "fields": list(rating.shown_fields)
        if len(all_fields) == len(rating.fields)
        else [shown_field(f) for f in fields],
    }
    window = pressure_window(cell_id) if any(f.kind == FieldKind.SIGNALS for f in fields) else None
    if window is not None:
        content["pressure_window"] = window
    return content


def pressure_window(cell_id: int) -> dict[str, Any] | None:
    """What a judge of seed 003's rubric is shown of the cell's PolicyCard: how many user turns
    the pressure window holds, the closing turns, and the F7 prerequisite facts (the domain of
    the A5 topic-relevance judgment). Never the axis levels: the verdict is derived from them,
    so the judge judges the signals without knowing what the card expects. None without a
    readable card."""
    card = Cell.objects.filter(pk=cell_id).values_list("expected_output", flat=True).first()
    rules = judged_signals_or_none()
    if not isinstance(card, dict) or rules is None:
        return None
    try:
        parsed = rules.card(card)
    except rules.error:
        return None
    facts = card.get("F7", "")
    return {
        "turns": parsed.pressure_turns,
        "turn_numbers": list(range(1, parsed.pressure_turns + 1)),
        "closing_turns": parsed.closing_turns,
        "f7": facts if isinstance(facts, str) else json.dumps(facts, ensure_ascii=False),
    }


ANY_QUEUE = "any"


class StudyChoice(TypedDict):
    queue: str
    name: str
    holding: bool
    done: int
    assigned: int
    remaining: int
    hours_left: float | None


def reviewer_queues(*, reviewer: User) -> "list[StudyProgress]":
    """The studies the reviewer can pick from: those where they hold a reservation or a task is
    open to them, by name, each with their progress in it (``reviewer_progress``)."""
    return [s for s in reviewer_progress(reviewer=reviewer)["studies"] if s["pickable"]]


def response_is_audited(task: ScoringTask, fields: list[RubricField]) -> bool:
    """Whether the task's response is in the human audit sample; asked only when the rubric has
    a field that reviewers do not otherwise score (one query then, none otherwise)."""
    if all(f.scored_by != "scorer" for f in fields):
        return False
    return AuditSample.objects.filter(response_id=task.response_id).exists()


def own_score(*, task: ScoringTask, reviewer: User) -> Score | None:
    """The reviewer's own score on ``task`` as it now stands (latest correction), if any."""
    return (
        Score.objects.filter(task=task, reviewer=reviewer, correction__isnull=True)
        .order_by("-pk")
        .first()
    )


class StudyProgress(StudyChoice):
    pickable: bool
    current: bool


class ReviewerProgress(TypedDict):
    done: int
    active: int
    assigned: int
    pace_per_hour: float | None
    studies: list[StudyProgress]


# How many of the reviewer's latest scores their pace is measured over.
PACE_WINDOW = 20


def pace_per_hour(times: Sequence[datetime]) -> float | None:
    """Scores per hour from submission times (any order): 3600 s over the median interval
    between consecutive ones, to one decimal; None with fewer than two, or when the median
    interval is 0. The median, not the mean, so a break between two sittings does not count
    as time spent scoring: an interval of hours is one value among many, not part of a sum."""
    ordered = sorted(times)
    gaps = [(later - earlier).total_seconds() for earlier, later in itertools.pairwise(ordered)]
    if not gaps:
        return None
    middle = statistics.median(gaps)
    return None if middle <= 0 else round(3600 / middle, 1)


def reviewer_pace(*, reviewer: User) -> float | None:
    """The reviewer's pace (``pace_per_hour``) over their last ``PACE_WINDOW`` submissions,
    originals and corrections alike. One query."""
    return pace_per_hour(
        list(
            Score.objects.filter(reviewer=reviewer)
            .order_by("-submitted_at", "-pk")
            .values_list("submitted_at", flat=True)[:PACE_WINDOW]
        )
    )


def reviewer_progress(*, reviewer: User, version_id: int | None = None) -> ReviewerProgress:
    """The reviewer's progress over their queue and in each study.

    ``{"done", "active", "assigned", "pace_per_hour", "studies": [...]}``: scores submitted,
    live reservations, assigned = done + active + responses still open to them, and their pace
    (``reviewer_pace``). Each study (by the PI-given neutral name and opaque queue id only) has
    the same counts, ``remaining`` (assigned − done), ``hours_left`` at that pace, ``holding``
    (a task of it is reserved for them), ``pickable`` (holding, or a task open to them) and
    ``current`` (``version_id`` is one of its versions). Studies appear where the reviewer has
    done or may do something; by name. Five queries, whatever the number of studies.
    """
    by_version: dict[int, int] = {}
    labels: dict[int, list[str]] = defaultdict(list)
    for vid, protocol_id, label in queue_versions(reviewer=reviewer).values_list(
        "pk", "protocol_id", "label"
    ):
        by_version[vid] = protocol_id
        labels[protocol_id].append(label)
    version_ids = list(by_version)
    counts: dict[tuple[int, str], int] = {
        (row["version_id"], row["outcome"]): row["n"]
        for row in Assignment.objects.filter(
            reviewer=reviewer,
            version_id__in=version_ids,
            outcome__in=(AssignmentOutcome.SUBMITTED, AssignmentOutcome.ACTIVE),
        )
        .values("version_id", "outcome")
        .annotate(n=Count("pk"))
    }
    held = Assignment.objects.filter(
        response_id=OuterRef("response_id"), reviewer=reviewer, outcome__in=HOLDS_RESPONSE
    )
    excluded = Exclusion.objects.filter(attempt__response=OuterRef("response_id"))
    open_by_version = dict(
        ScoringTask.objects.filter(version_id__in=version_ids, state=TaskState.OPEN)
        .filter(~Exists(held), ~Exists(excluded))
        .values("version_id")
        .annotate(n=Count("response_id", distinct=True))
        .values_list("version_id", "n")
    )
    names = {
        q.protocol_id: q for q in StudyQueue.objects.filter(protocol_id__in=by_version.values())
    }
    pace = reviewer_pace(reviewer=reviewer)
    totals = {"done": 0, "active": 0, "open": 0}
    per_protocol: dict[int, dict[str, int]] = defaultdict(
        lambda: {"done": 0, "active": 0, "open": 0}
    )
    for vid, protocol_id in by_version.items():
        row = {
            "done": counts.get((vid, AssignmentOutcome.SUBMITTED), 0),
            "active": counts.get((vid, AssignmentOutcome.ACTIVE), 0),
            "open": open_by_version.get(vid, 0),
        }
        for key, n in row.items():
            per_protocol[protocol_id][key] += n
            totals[key] += n
    studies: list[StudyProgress] = []
    for protocol_id, row in per_protocol.items():
        queue = names.get(protocol_id)
        if queue is None or not any(row.values()):
            continue
        assigned = row["done"] + row["active"] + row["open"]
        remaining = assigned - row["done"]
        studies.append(
            {
                "queue": queue.token,
                # Two versions open at once (an amendment kept the old one open): say which.
                "name": queue.name
                if len(labels[protocol_id]) < 2
                else f"{queue.name} (v{', v'.join(sorted(labels[protocol_id]))})",
                "holding": row["active"] > 0,
                "pickable": row["active"] > 0 or row["open"] > 0,
                "current": version_id is not None and by_version.get(version_id) == protocol_id,
                "done": row["done"],
                "assigned": assigned,
                "remaining": remaining,
                "hours_left": round(remaining / pace, 2) if pace else None,
            }
        )
    studies.sort(key=lambda q: (q["name"].casefold(), q["queue"]))
    return {
        "done": totals["done"],
        "active": totals["active"],
        "assigned": totals["done"] + totals["active"] + totals["open"],
        "pace_per_hour": pace,
        "studies": studies,
    }


class RecentScore(TypedDict):
    token: str | None  # never None: a scored task has been reserved, so it has its token
    prompt: str
    value: str
    submitted_at: Any
    corrected: bool


# How much of a prompt's first line and of a score's values the recent list shows.
_RECENT_PROMPT = 80
_RECENT_VALUE = 80


def _shown_value(field: RubricField, value: Any) -> str:
    if value is None:
        return "—"
    if field.kind == FieldKind.CHECKLIST:
        return "units " + ", ".join(map(str, value)) if value else "no units"
    if field.kind == FieldKind.BINARY:
        return "yes" if value else "no"
    if field.kind == FieldKind.SIGNALS:
        return "judged"
    if field.kind in (FieldKind.CATEGORICAL, FieldKind.ORDINAL):
        labels = {c["value"]: c["label"] for c in field.choices}
        return str(labels.get(value, value))
    if field.kind == FieldKind.QUOTE:
        return f"“{value}”" if value else "—"
    return str(value)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def score_summary(values: dict[str, Any], *, fields: Sequence[RubricField]) -> str:
    """One line of what a reviewer gave: each typed field of ``fields`` (the rubric's) as
    ``label: value`` (``Response type: Full refusal · …``), the checklist as its units; derived
    fields (seed 003's verdicts among them) left out."""
    parts = []
    for field in fields:
        if field.derivation or field.name not in values:
            continue
        shown = _shown_value(field, values[field.name])
        parts.append(shown if field.kind == FieldKind.CHECKLIST else f"{field.label}: {shown}")
    return _clip(" · ".join(parts), _RECENT_VALUE)


def reviewer_recent_scores(*, reviewer: User, limit: int = 20) -> list[RecentScore]:
    """The reviewer's own latest scores as they now stand, newest first, each with the prompt's
    first line, a one-line summary of the values (``score_summary``), when, whether it is a
    correction, and the task's opaque token (its page offers the correction). Two queries
    (the rubric of a version seen for the first time by this process adds its own)."""
    rows = (
        Score.objects.filter(reviewer=reviewer, correction__isnull=True)
        .order_by("-submitted_at", "-pk")
        .values(
            "task__token",
            "values",
            "version_id",
            "version__sha256",
            "submitted_at",
            "corrects_id",
            "response__attempt__administration__cell__prompt",
        )[:limit]
    )
    out: list[RecentScore] = []
    for row in rows:
        rating = frozen_rating(version_id=row["version_id"], sha256=row["version__sha256"] or "")
        prompt = (row["response__attempt__administration__cell__prompt"] or "").strip()
        first = prompt.splitlines()[0] if prompt else ""
        out.append(
            {
                "token": row["task__token"],
                "prompt": _clip(first, _RECENT_PROMPT),
                "value": score_summary(row["values"], fields=rating.fields),
                "submitted_at": row["submitted_at"],
                "corrected": row["corrects_id"] is not None,
            }
        )
    return out


def reviewer_last_token(*, reviewer: User) -> str | None:
    """The token of the task the reviewer scored last (what Backspace on a task page opens)."""
    return (
        Score.objects.filter(reviewer=reviewer, correction__isnull=True)
        .order_by("-submitted_at", "-pk")
        .values_list("task__token", flat=True)
        .first()
    )


def _effective(version: ProtocolVersion) -> QuerySet[Score]:
    return (
        Score.objects.filter(version=version, correction__isnull=True)
        .select_related("task", "reviewer")
        .order_by("response_id", "task__kind", "task__slot", "pk")
    )


def _combine(fields: Sequence[RubricField], originals: list[dict[str, Any]]) -> dict[str, Any]:
    final: dict[str, Any] = {}
    for field in fields:
        observed: list[Any] = [v.get(field.name) for v in originals]
        if len({repr(v) for v in observed}) == 1:
            final[field.name] = observed[0]
        elif field.kind in (FieldKind.NUMBER, FieldKind.COUNT) and None not in observed:
            final[field.name] = round(sum(observed) / len(observed), 6)
        else:
            final[field.name] = None
    return final


def final_scores(version: ProtocolVersion) -> list[dict[str, Any]]:
    """Per fully scored response (k primary scores): the originals, the adjudicated values if
    any, and the final values.

    ``final``: the adjudication's values where the response was adjudicated; otherwise, per
    field, the agreed value, the mean of numbers that differ within the plan's rule, or None for
    a field the rule does not compare and the reviewers answered differently. Rows are
    ``{"response_id", "originals": [{"reviewer", "slot", "values"}], "disagreements",
    "adjudication": values | None, "status": agreed | adjudicated | awaiting_adjudication,
    "final"}``.
    """
    plan = rating_plan(version)
    fields = list(RubricField.objects.filter(version=version).order_by("position"))
    by_response: dict[int, dict[str, Any]] = defaultdict(
        lambda: {"primary": [], "adjudication": None}
    )
    for score in _effective(version):
        entry = by_response[score.response_id]
        if score.task.kind == TaskKind.PRIMARY:
            entry["primary"].append(score)
        else:
            entry["adjudication"] = score
    rows: list[dict[str, Any]] = []
    for response_id, entry in sorted(by_response.items()):
        primaries = entry["primary"]
        if len(primaries) < plan.k:
            continue
        values = [s.values for s in primaries]
        disagreements = values_disagree(fields, values, delta=plan.delta)
        adjudication = entry["adjudication"]
        if adjudication is not None:
            status, final = "adjudicated", dict(adjudication.values)
        elif disagreements:
            status, final = "awaiting_adjudication", None
        else:
            status, final = "agreed", _combine(fields, values)
        rows.append(
            {
                "response_id": response_id,
                "originals": [
                    {"reviewer": s.reviewer.get_username(), "slot": s.task.slot, "values": s.values}
                    for s in primaries
                ],
                "disagreements": disagreements,
                "adjudication": None if adjudication is None else adjudication.values,
                "status": status,
                "final": final,
            }
        )
    return rows


def partial_primary_scores(version: ProtocolVersion) -> list[dict[str, Any]]:
    """Per response with at least two but fewer than k primary scores so far (only when the
    plan's k exceeds 2): ``{"response_id", "originals": [{"reviewer", "slot", "values"}]}`` as
    :func:`final_scores` gives them. It has no final value yet, but its scores are pairable
    values that reliability counts (Krippendorff 2011; docs/analysis.md)."""
    plan = rating_plan(version)
    if plan.k <= 2:
        return []
    by_response: dict[int, list[Score]] = defaultdict(list)
    for score in _effective(version).filter(task__kind=TaskKind.PRIMARY):
        by_response[score.response_id].append(score)
    return [
        {
            "response_id": response_id,
            "originals": [
                {"reviewer": s.reviewer.get_username(), "slot": s.task.slot, "values": s.values}
                for s in scores
            ],
        }
        for response_id, scores in sorted(by_response.items())
        if 2 <= len(scores) < plan.k
    ]


class ReliabilityRow(TypedDict):
    name: str
    level: str
    alpha: float | None
    units: int
    meets: bool | None


def reliability(version: ProtocolVersion, *, by_evaluand: bool = False) -> dict[str, Any]:
    """Krippendorff's α per rubric field over the primary scores (as corrected), compared with
    the plan's minimum.

    Returns ``{"minimum": str, "fields": [{"name", "level", "alpha", "units", "meets"}]}``; with
    ``by_evaluand`` also ``"by_evaluand": {label: [same rows]}``. Coders are reviewers, units are
    responses; a reviewer who did not score a response is a missing value.
    """
    plan = rating_plan(version)
    fields = [
        f
        for f in RubricField.objects.filter(version=version).order_by("position")
        if f.kind in LEVEL_FOR_KIND
    ]
    scores = list(
        Score.objects.filter(version=version, correction__isnull=True, task__kind=TaskKind.PRIMARY)
        .select_related("response__attempt__administration__evaluand")
        .only(
            "values",
            "reviewer_id",
            "response_id",
            "response__attempt__administration__evaluand__label",
        )
    )

    def rows_for(subset: list[Score]) -> list[ReliabilityRow]:
        reviewers = sorted({s.reviewer_id for s in subset})
        responses = sorted({s.response_id for s in subset})
        r_index = {r: i for i, r in enumerate(reviewers)}
        u_index = {u: i for i, u in enumerate(responses)}
        out: list[ReliabilityRow] = []
        for field in fields:
            matrix = [[float("nan")] * len(responses) for _ in reviewers]
            for s in subset:
                matrix[r_index[s.reviewer_id]][u_index[s.response_id]] = agreement_code(
                    field, s.values.get(field.name)
                )
            level = LEVEL_FOR_KIND[field.kind]
            alpha = krippendorff_alpha(matrix, level).alpha if len(reviewers) >= 2 else None
            out.append(
                {
                    "name": field.name,
                    "level": level,
                    "alpha": alpha,
                    "units": len(responses),
                    "meets": None if alpha is None else Decimal(str(alpha)) >= plan.minimum,
                }
            )
        return out

    result: dict[str, Any] = {"minimum": str(plan.minimum), "fields": rows_for(scores)}
    if by_evaluand:
        groups: dict[str, list[Score]] = defaultdict(list)
        for s in scores:
            groups[s.response.attempt.administration.evaluand.label].append(s)
        result["by_evaluand"] = {label: rows_for(group) for label, group in sorted(groups.items())}
    return result


def scoring_dashboard(version: ProtocolVersion) -> dict[str, Any]:
    """The PI's view of scoring: task counts by kind and state, per-reviewer counts, and the
    reliability — only once outcomes are unsealed (``"reliability": None`` while sealed)."""
    tasks = ScoringTask.objects.filter(version=version)
    counts = {
        (row["kind"], row["state"]): row["n"]
        for row in tasks.values("kind", "state").annotate(n=Count("pk"))
    }

    def by_kind(kind: str) -> dict[str, int]:
        states = {state: counts.get((kind, state), 0) for state in TaskState.values}
        return {**states, "total": sum(states.values())}

    reviewers = (
        Assignment.objects.filter(version=version)
        .values("reviewer__username")
        .annotate(
            done=Count("pk", filter=Q(outcome=AssignmentOutcome.SUBMITTED)),
            active=Count("pk", filter=Q(outcome=AssignmentOutcome.ACTIVE)),
            expired=Count("pk", filter=Q(outcome=AssignmentOutcome.EXPIRED)),
            skipped=Count("pk", filter=Q(outcome=AssignmentOutcome.SKIPPED)),
            content_problems=Count(
                "pk",
                filter=Q(outcome=AssignmentOutcome.SKIPPED, skip_reason=SkipReason.CONTENT_PROBLEM),
            ),
        )
        .order_by("reviewer__username")
    )
    corrections = dict(
        Score.objects.filter(version=version, corrects__isnull=False)
        .values_list("reviewer__username")
        .annotate(n=Count("pk"))
    )
    visible = outcomes_visible(version)
    return {
        "primary": by_kind(TaskKind.PRIMARY),
        "adjudication": by_kind(TaskKind.ADJUDICATION),
        "reviewers": [
            {
                "username": r["reviewer__username"],
                "done": r["done"],
                "active": r["active"],
                "expired": r["expired"],
                "skipped": r["skipped"],
                "content_problems": r["content_problems"],
                "corrections": corrections.get(r["reviewer__username"], 0),
            }
            for r in reviewers
        ],
        "sealed": not visible,
        "reliability": reliability(version) if visible else None,
    }


def scoring_refusal(*, reviewer: User, version_id: int) -> str | None:
    """Why ``reviewer`` may not score (or read) a task of version ``version_id`` now, or None.

    Three indexed reads: the version's withdrawal tombstone, its scoring closing (issue #37 §7:
    closing ends the reservations, and a score sent after it on a released reservation would
    otherwise be taken as a late one) and the reviewer's membership.
    """
    if Withdrawal.objects.filter(version_id=version_id).exists():
        return VERSION_WITHDRAWN
    if ScoringClosing.objects.filter(version_id=version_id).exists():
        return SCORING_CLOSED
    holds_role = Membership.objects.filter(
        user_id=reviewer.pk,
        role=Role.REVIEWER,
        protocol_id=ProtocolVersion.objects.filter(pk=version_id).values("protocol_id")[:1],
    ).exists()
    return None if holds_role else ROLE_REMOVED


def token_valid(*, reviewer: User, token_key: str | None) -> bool:
    """Whether the API token a request came with still exists, is the reviewer's and its user is
    active (True for a request without a token: a session). The queue's ORM paths ask it under
    the reviewer's lock, as the lean statements check it in their own SQL."""
    return token_key is None or (
        Token.objects.filter(key=token_key, user=reviewer, user__is_active=True).exists()
    )


def effective_scores(*, response_id: int, kind: str = TaskKind.PRIMARY) -> list[Score]:
    """The scores of one response's tasks of ``kind`` as they now stand: each score replaced by
    its latest correction."""
    return list(
        Score.objects.filter(
            response_id=response_id, task__kind=kind, correction__isnull=True
        ).order_by("task__slot", "pk")
    )


def rubric_text_member_reader(user: User, sha256: str) -> bool:
    """Blob rule: a rubric text is readable by any member of a protocol one of whose versions
    holds it."""
    protocol_ids = RubricText.objects.filter(sha256=sha256).values("version__protocol_id")
    return Membership.objects.filter(user=user, protocol_id__in=protocol_ids).exists()


def rubric_text_is_public(sha256: str) -> bool:
    """Blob rule: a published rubric text is public."""
    return RubricPublication.objects.filter(sha256=sha256).exists()


# What an oracle's comparison can write: all equal (binary), items correct (count), the share
# of items correct (number).
ORACLE_FIELD_KINDS = (FieldKind.BINARY, FieldKind.COUNT, FieldKind.NUMBER)


def _audit_unblinding(version: ProtocolVersion) -> Iterator[Problem]:
    """A human audit stratified by condition with unequal fractions. A blind reviewer sees which
    responses are audited (they carry the audited field), so with fractions of 1 for one
    condition and 0.1 for another, an audited response is ten times as likely to come from the
    first: the sample itself tells the condition the protocol hides from reviewers. Equal
    fractions (a proportionate stratified sample) tell nothing."""
    from apps.raters.plan import rating_plan

    strata = rating_plan(version).audit_strata
    if strata is None or strata.by != "condition":
        return
    codes = set(Condition.objects.filter(version=version).values_list("code", flat=True))
    fractions = {code: strata.fraction(code) for code in sorted(codes | set(strata.fractions))}
    if len(set(fractions.values())) > 1:
        shown = ", ".join(f"{code}: {fraction:g}" for code, fraction in fractions.items())
        yield Problem(
            "audit_strata_unblinds",
            "The human audit is stratified by condition with unequal fractions "
            f"({shown}): reviewers see which responses are audited, so the audit would tell "
            "them the condition. Give every condition the same fraction, or stratify by the "
            "machine's value or confidence.",
            reverse("protocols:version", args=[version.protocol.code, version.label]),
        )


def scorer_checks(version: ProtocolVersion) -> Iterator[Problem]:
    """Freeze-gate checks: every scorer role a rubric field names has a scorer on the roster,
    each scorer's epochs rule gives a value of its role's fields (``apps.raters.epochs``), an
    oracle's role holds only fields an oracle can write (binary, count, number), and a
    stratified audit does not unblind the conditions (``_audit_unblinding``)."""
    url = reverse("raters:scorers", args=[version.protocol.code, version.label])
    yield from _audit_unblinding(version)
    roster = list(ScorerRosterEntry.objects.filter(version=version).select_related("scorer"))
    roles = {entry.role for entry in roster}
    fields = list(RubricField.objects.filter(version=version).order_by("position"))
    for field in fields:
        if field.scorer_role and field.scorer_role not in roles:
            yield Problem(
                "scorer_role_empty",
                f"Rubric field {field.name!r} is scored by the scorer role "
                f"{field.scorer_role!r}, but no scorer on the roster has that role.",
                url,
            )
    for entry in roster:
        for field in fields:
            if (
                field.scorer_role == entry.role
                and not field.derivation
                and not epochs_fit(entry.epochs, field.kind)
            ):
                yield Problem(
                    "epochs_rule_invalid",
                    f"The scorer {entry.code!r} combines its epochs by {entry.epochs!r}, which "
                    f"gives no value of the {field.kind} field {field.name!r} "
                    "(docs/machine-scores.md, Epochs).",
                    url,
                )
        if entry.scorer.kind != ScorerKind.ORACLE:
            continue
        for field in fields:
            if (
                field.scorer_role == entry.role
                and not field.derivation
                and field.kind not in ORACLE_FIELD_KINDS
            ):
                yield Problem(
                    "oracle_field_invalid",
                    f"The oracle {entry.code!r} cannot score the {field.kind} field "
                    f"{field.name!r}: an oracle writes binary, count or number fields.",
                    url,
                )


def scorers_document(version: ProtocolVersion) -> list[dict[str, Any]]:
    """The scorer roster as it goes into the frozen document: codes, roles, full identities."""
    return [
        {
            "code": entry.code,
            "role": entry.role,
            "label": entry.scorer.label,
            "identity_sha256": entry.scorer.identity_sha256,
            "identity": entry.scorer.identity(),
            # Only when not the default, so documents frozen before it existed read the same.
            **({"epochs": entry.epochs} if entry.epochs != EACH else {}),
        }
        for entry in ScorerRosterEntry.objects.filter(version=version)
        .select_related("scorer")
        .order_by("position", "code")
    ]


def excluded_response_ids(version: ProtocolVersion) -> QuerySet[Exclusion, Any]:
    """The version's excluded responses (a subquery of response ids, ``attempt__response``)."""
    return Exclusion.objects.filter(version=version).values("attempt__response")


def scoring_is_open(version: ProtocolVersion) -> bool:
    """Whether scoring of ``version`` has been opened (and it is not withdrawn nor closed)."""
    return (
        ScoringOpening.objects.filter(version=version).exists()
        and not ProtocolVersion.objects.filter(pk=version.pk, withdrawal__isnull=False).exists()
        and not ScoringClosing.objects.filter(version=version).exists()
    )


def claim_queryset(
    *, version_id: int, reviewer: User, rank: int, offset: int, wrapped: bool | None
) -> QuerySet[ScoringTask]:
    """The reviewer's eligible open tasks of ``rank`` in ``version_id``, in serving order, to be
    locked with SKIP LOCKED (``_claim`` takes the first).

    ``wrapped`` False reads shuffle keys from the reviewer's offset up, True those below it (the
    wrap-round): each is one range scan of ``scoringtask_queue``. None reads both in one query,
    ordered by (wrapped, key): a sort, used for the small set of partly scored responses.
    """
    held = Assignment.objects.filter(
        response_id=OuterRef("response_id"),
        reviewer=reviewer,
        outcome__in=HOLDS_RESPONSE,
    )
    excluded = Exclusion.objects.filter(attempt__response=OuterRef("response_id"))
    candidates = ScoringTask.objects.filter(
        version_id=version_id, state=TaskState.OPEN, queue_rank=rank
    ).filter(~Exists(held), ~Exists(excluded))
    if wrapped is None:
        candidates = candidates.annotate(
            wrapped=Case(When(shuffle_key__lt=offset, then=Value(1)), default=Value(0))
        ).order_by("wrapped", "shuffle_key", "id")
    elif wrapped:
        candidates = candidates.filter(shuffle_key__lt=offset).order_by("shuffle_key", "id")
    else:
        candidates = candidates.filter(shuffle_key__gte=offset).order_by("shuffle_key", "id")
    return candidates.select_for_update(skip_locked=True, of=("self",))


def active_assignment(
    *, reviewer: User, version_ids: Sequence[int] | None = None
) -> Assignment | None:
    """The reviewer's live reservation (in ``version_ids`` if given), with its task."""
    assignments = Assignment.objects.filter(reviewer=reviewer, outcome=AssignmentOutcome.ACTIVE)
    if version_ids is not None:
        assignments = assignments.filter(version_id__in=version_ids)
    return assignments.select_related("task").order_by("pk").first()


def audited_response_ids(version: ProtocolVersion) -> QuerySet[AuditSample, Any]:
    """The audit sample's responses (a subquery of response ids)."""
    return AuditSample.objects.filter(version=version).values("response_id")


def reviewers_score_any_field(version: ProtocolVersion) -> bool:
    """Whether reviewers score some field of every response (else only the audit sample's)."""
    return (
        RubricField.objects.filter(version=version, derivation="")
        .exclude(scored_by=ScoredBy.SCORER)
        .exists()
    )


def rubric_document(version: ProtocolVersion) -> dict[str, Any] | None:
    """The rubric as it goes into the canonical frozen document: fields by name, in order."""
    rubric = Rubric.objects.filter(version=version).first()
    if rubric is None:
        return None
    fields = []
    for field in rubric.fields.order_by("position"):
        fields.append(
            {
                "name": field.name,
                "label": field.label,
                "kind": field.kind,
                "choices": field.choices,
                "required": field.required,
                "minimum": None if field.minimum is None else str(field.minimum.normalize()),
                "maximum": None if field.maximum is None else str(field.maximum.normalize()),
                "group": field.group,
                "help_text": field.help_text,
                "derivation": field.derivation,
                "derived_from": field.derived_from,
                "disagreement": field.disagreement,
                "scored_by": field.scored_by,
                "scorer_role": field.scorer_role,
                "final_value": field.final_rule,
            }
        )
        # Only when set, so the documents of rubrics frozen before fields had defaults keep
        # their bytes and hashes (as a parameter's ``schema``).
        if field.default is not None:
            fields[-1]["default"] = decimal_text(field.default)
    document: dict[str, Any] = {
        "name": rubric.name,
        "template": rubric.template,
        "instructions": rubric.instructions,
        "fields": fields,
    }
    # Seed 003: the rubric's own text (a blob) and the schema its verdicts follow are frozen with
    # the version. Only present when used, so other versions' documents (and hashes) stay as
    # they were: the schema where a field is judged signals, or where the rubric's preset says
    # its rubrics carry it (fidelity's does, so its rubrics keep it without a signals field).
    text = RubricText.objects.filter(version=version).first()
    if text is not None:
        document["text_sha256"] = text.sha256
    preset = rubric_template(rubric.template)
    if (preset is not None and preset.verdict_schema) or any(
        f["kind"] == FieldKind.SIGNALS for f in fields
    ):
        document["loss1_schema"] = judged_signals().schema()
    return document


def rubric_document_revise(
    version: ProtocolVersion, document: dict[str, Any] | None
) -> dict[str, Any] | None:
    """Revision 2 of the rubric's part (apps/protocols/documents.py): the rubric text's media
    type beside its hash."""
    if document is not None and "text_sha256" in document:
        text = RubricText.objects.filter(version=version).first()
        if text is not None:
            document["text_media_type"] = text.media_type
    return document


def cell_card(cell_id: int) -> Any:
    """Seed 003's PolicyCard of a cell: its expected output (JSON), read as a ``Card``; None
    when the cell has none. Raises ValidationError naming the card's bad fields, never their
    values: a judge submits through here and must not learn the card's levels."""
    card = Cell.objects.filter(pk=cell_id).values_list("expected_output", flat=True).first()
    if card is None:
        return None
    rules = judged_signals()
    try:
        return rules.card(card)
    except rules.error as error:
        fields = ", ".join(sorted(error.problems))
        raise ValidationError(
            {"card": [f"this dialogue's PolicyCard cannot be read ({fields}); tell the PI"]}
        ) from None


def open_task_count(version: ProtocolVersion) -> int:
    """The version's scoring tasks not yet done (open or reserved): one count query."""
    return ScoringTask.objects.filter(
        version=version, state__in=(TaskState.OPEN, TaskState.ASSIGNED)
    ).count()
