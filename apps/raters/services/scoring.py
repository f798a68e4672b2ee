"""Submitting and correcting scores, and the plan's disagreement rule (adjudication)."""

import secrets
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Subquery
from django.utils import timezone

from apps.accounts.models import Role, User
from apps.core.errors import NotFound
from apps.deviations.models import EntryKind
from apps.deviations.services import version_log_append
from apps.items.models import KeyUnit
from apps.protocols.models import ProtocolVersion
from apps.raters.frozen import frozen_rating
from apps.raters.models import (
    HOLDS_RESPONSE,
    Assignment,
    AssignmentOutcome,
    FieldKind,
    Score,
    ScoringTask,
    TaskKind,
    TaskState,
)
from apps.raters.selectors import cell_card, effective_scores, response_is_audited, token_valid
from apps.raters.services import lean
from apps.raters.services.queue import lock_reviewer
from apps.raters.services.revocation import scoring_refusal_check
from apps.raters.values import reviewer_fields, score_values_clean, values_disagree
from apps.responses.models import Response

NO_SUCH_TASK = "No such task."
_FOREIGN_KEYS = ["task", "version", "response", "reviewer", "corrects"]


def _lock_response_tasks(response_id: int) -> dict[int, ScoringTask]:
    tasks = ScoringTask.objects.select_for_update().filter(response_id=response_id).order_by("pk")
    return {task.pk: task for task in tasks}


def _units(cell_id: int) -> list[tuple[int, bool]]:
    return list(
        KeyUnit.objects.filter(cell_id=cell_id)
        .order_by("position")
        .values_list("position", "executable")
    )


def _clean(*, task: ScoringTask, values: dict[str, Any]) -> dict[str, Any]:
    response = (
        Response.objects.filter(pk=task.response_id)
        .values("word_count", "text", "attempt__administration__cell_id", "version__sha256")
        .get()
    )
    rating = frozen_rating(version_id=task.version_id, sha256=response["version__sha256"])
    # Fields a scorer scores are a reviewer's to fill only on the human audit sample.
    fields = list(rating.fields)
    fields = reviewer_fields(fields, audited=response_is_audited(task, fields))
    units = []
    if any(f.kind == FieldKind.CHECKLIST for f in fields):
        units = _units(response["attempt__administration__cell_id"])
    card = None
    if any(f.kind == FieldKind.SIGNALS for f in fields):
        card = cell_card(response["attempt__administration__cell_id"])
    return score_values_clean(
        fields=fields,
        values=values,
        word_count=response["word_count"],
        units=units,
        card=card,
        drift_epsilon=rating.plan.drift_epsilon,
        text=response["text"],
    )


def _adjudicate_if_needed(
    *, task: ScoringTask, sha256: str | None = None, primaries: list[dict[str, Any]] | None = None
) -> ScoringTask | None:
    """Apply the plan's disagreement rule to the task's response once its k primary scores are
    in: create its one adjudication task on disagreement and return it (None otherwise).
    ``sha256``: the task's version's, when the caller has already read it; ``primaries``: the
    values of the response's primary scores as they now stand, when the caller has read them
    (``lean.primary_values``), else read here (``effective_scores``)."""
    sha256 = sha256 or _version_sha256(task.version_id)
    rating = frozen_rating(version_id=task.version_id, sha256=sha256)
    plan = rating.plan
    if plan.k < 2:
        return None  # one score per response: nothing to disagree with
    if primaries is None:
        primaries = [s.values for s in effective_scores(response_id=task.response_id)]
    if len(primaries) < plan.k:
        return None
    if not values_disagree(rating.fields, primaries, delta=plan.delta):
        return None
    if ScoringTask.objects.filter(
        response_id=task.response_id, kind=TaskKind.ADJUDICATION
    ).exists():
        # Already routed to adjudication (a correction of a primary that still disagrees):
        # the response has its one adjudication task.
        return None
    adjudication = ScoringTask(
        version_id=task.version_id,
        response_id=task.response_id,
        kind=TaskKind.ADJUDICATION,
        slot=1,
        shuffle_key=task.shuffle_key,
        queue_rank=0,
    )
    adjudication.save()
    return adjudication


def _version_sha256(version_id: int) -> str:
    return ProtocolVersion.objects.filter(pk=version_id).values_list("sha256", flat=True).get()


def _existing(*, idempotency_key: str, reviewer: User, task_token: str) -> Score | None:
    score = Score.objects.select_related("task").filter(idempotency_key=idempotency_key).first()
    if score is None:
        return None
    if score.reviewer_id != reviewer.pk or score.task.token != task_token:
        # Never hand back someone else's score: that would leak it.
        raise ValidationError(
            {"idempotency_key": ["This idempotency key was used for another submission."]}
        )
    return score


def score_submit(
    *,
    task_token: str,
    reviewer: User,
    values: dict[str, Any],
    idempotency_key: str,
    seconds_spent: int | None = None,
    token_key: str | None = None,
) -> Score:
    """Store the reviewer's score for the task they hold and return it (see
    ``score_submit_outcome``, which also says whether this call stored it; it is the
    transaction)."""
    return score_submit_outcome(
        task_token=task_token,
        reviewer=reviewer,
        values=values,
        idempotency_key=idempotency_key,
        seconds_spent=seconds_spent,
        token_key=token_key,
    )[0]


def _lean_submit(
    *,
    task_token: str,
    reviewer: User,
    values: dict[str, Any],
    idempotency_key: str,
    seconds_spent: int | None,
    token_key: str | None,
) -> Score | None:
    """The common case on PostgreSQL in two statements (``lean.py``); None hands the call to the
    ORM path, which answers every other case (repeats, expired reservations, refusals)."""
    target = lean.lock_for_submit(reviewer_id=reviewer.pk, token=task_token)
    if target is None:
        raise NotFound(NO_SUCH_TASK)
    rating = frozen_rating(version_id=target.task.version_id, sha256=target.sha256)
    fields = list(rating.fields)
    if any(f.scored_by == "scorer" or f.kind == FieldKind.SIGNALS for f in fields):
        # Machine-scored fields and the audit sample, and seed 003's signals (checked against
        # the cell's card): the ORM path decides.
        return None
    units = _units(target.cell_id) if rating.has_checklist else []
    # A quote is checked against the response's text, read only for rubrics that have one.
    text = (
        Response.objects.filter(pk=target.task.response_id).values_list("text", flat=True).get()
        if rating.has_quote
        else None
    )
    try:
        cleaned = score_values_clean(
            fields=fields, values=values, word_count=target.word_count, units=units, text=text
        )
    except ValidationError:
        return None  # the ORM path says 404 first for a task not held, then the same error
    written = lean.write_score(
        target=target,
        reviewer_id=reviewer.pk,
        values=cleaned,
        idempotency_key=idempotency_key,
        seconds_spent=seconds_spent,
        token_key=token_key,
    )
    if written is None:
        return None
    locked = target.task
    task = lean.task_instance(locked.id, locked, TaskState.DONE)
    score = lean.stored(
        Score(
            id=written[0],
            task=task,
            version_id=locked.version_id,
            response_id=locked.response_id,
            reviewer=reviewer,
            values=cleaned,
            idempotency_key=idempotency_key,
            seconds_spent=seconds_spent,
            submitted_at=written[1],
            correction_reason="",
        )
    )
    # The disagreement rule applies once the response's last primary task is done, and only
    # when the plan asks for more than one score.
    if (
        locked.kind == TaskKind.PRIMARY
        and rating.plan.k >= 2
        and all(t.state == TaskState.DONE for t in target.siblings if t.kind == TaskKind.PRIMARY)
    ):
        _adjudicate_if_needed(
            task=task,
            sha256=target.sha256,
            primaries=lean.primary_values(response_id=locked.response_id),
        )
    return score


def _held_task(
    *, task_token: str, reviewer: User
) -> tuple[dict[int, ScoringTask], ScoringTask, Assignment]:
    """The response's tasks locked in id order, the task behind ``task_token`` and the
    reviewer's latest assignment of it. Raises NotFound for a token that does not exist or that
    the reviewer never held (one answer for both), ScoringClosed for one they may no longer
    score (the reason is said only to the reviewer who held the task)."""
    tasks = {
        t.pk: t
        for t in ScoringTask.objects.select_for_update()
        .filter(
            response_id=Subquery(
                ScoringTask.objects.filter(token=task_token).values("response_id")[:1]
            )
        )
        .order_by("pk")
    }
    task = next((t for t in tasks.values() if t.token == task_token), None)
    assignment = (
        None
        if task is None
        else Assignment.objects.filter(task=task, reviewer=reviewer)
        .order_by("-reserved_at")
        .first()
    )
    if task is None or assignment is None:
        raise NotFound(NO_SUCH_TASK)
    # Revocation: a reviewer removed from the protocol, or a withdrawn version, scores no more.
    scoring_refusal_check(reviewer=reviewer, version_id=task.version_id)
    if not _may_score(reviewer=reviewer, version_id=task.version_id):
        raise NotFound(NO_SUCH_TASK)
    return tasks, task, assignment


@transaction.atomic
def score_submit_outcome(
    *,
    task_token: str,
    reviewer: User,
    values: dict[str, Any],
    idempotency_key: str,
    seconds_spent: int | None = None,
    token_key: str | None = None,
) -> tuple[Score, bool]:
    """Store the reviewer's score for the task they hold; return it and whether this call stored
    it (False for a repeat of an earlier submit with the same idempotency key).

    A second submit with the same ``idempotency_key`` returns the first score and stores nothing.
    Values are checked field by field against the rubric (errors name the field); derived fields
    are computed here. After the k-th primary score of a response the plan's disagreement rule is
    applied and, on disagreement, an adjudication task is created. Raises NotFound (a 404)
    for a token the reviewer holds no reservation on, ValidationError otherwise.

    A reservation that expired is still honoured when nobody else has taken the task meanwhile
    (the work is not lost); when someone has, the values are refused and nothing is stored.
    ``token_key`` is the API token the request came with, checked again in the write itself;
    a score is refused (404) once the reviewer role is removed or the version withdrawn.
    """
    if not idempotency_key or len(idempotency_key) > 64:
        raise ValidationError({"idempotency_key": ["Send an idempotency key of 1–64 characters."]})
    if seconds_spent is not None and (
        not isinstance(seconds_spent, int) or isinstance(seconds_spent, bool) or seconds_spent < 0
    ):
        raise ValidationError({"seconds_spent": ["Give the seconds spent as a whole number ≥ 0."]})
    if lean.available():
        score = _lean_submit(
            task_token=task_token,
            reviewer=reviewer,
            values=values,
            idempotency_key=idempotency_key,
            seconds_spent=seconds_spent,
            token_key=token_key,
        )
        if score is not None:
            return score, True
    lock_reviewer(reviewer)
    existing = _existing(idempotency_key=idempotency_key, reviewer=reviewer, task_token=task_token)
    if existing is not None:
        return existing, False
    if not token_valid(reviewer=reviewer, token_key=token_key):
        raise lean.TokenRevoked
    tasks, task, assignment = _held_task(task_token=task_token, reviewer=reviewer)
    now = timezone.now()
    if assignment.outcome == AssignmentOutcome.SUBMITTED:
        raise ValidationError(
            "You have already scored this task. A change is a correction, with a reason."
        )
    if assignment.outcome == AssignmentOutcome.SKIPPED:
        raise ValidationError(
            "You skipped this task: it went back to the pool for other reviewers and your "
            "values were not stored."
        )
    if assignment.outcome != AssignmentOutcome.ACTIVE:
        holds_response = Assignment.objects.filter(
            response_id=task.response_id,
            reviewer=reviewer,
            outcome__in=HOLDS_RESPONSE,
        ).exists()
        if task.state != TaskState.OPEN or holds_response:
            raise ValidationError(
                "Your reservation of this task expired and the task went back to the pool; "
                "your values were not stored. Ask for your next task."
            )
        assignment = Assignment(
            task=task,
            version_id=task.version_id,
            response_id=task.response_id,
            reviewer=reviewer,
            reserved_at=assignment.reserved_at,
            expires_at=assignment.expires_at,
            outcome=AssignmentOutcome.SUBMITTED,
        )
    cleaned = _clean(task=task, values=values)
    score = Score(
        task=task,
        version_id=task.version_id,
        response_id=task.response_id,
        reviewer=reviewer,
        values=cleaned,
        idempotency_key=idempotency_key,
        seconds_spent=seconds_spent,
    )
    # Foreign keys were just read under lock; the constraints are the database's to enforce.
    score.full_clean(exclude=_FOREIGN_KEYS, validate_unique=False, validate_constraints=False)
    try:
        with transaction.atomic():
            score.save()
    except IntegrityError:
        raise ValidationError(
            "This task has already been scored. A change is a correction, with a reason."
        ) from None
    assignment.outcome = AssignmentOutcome.SUBMITTED
    assignment.ended_at = now
    if assignment.pk is None:
        assignment.save()
    else:
        assignment.save(update_fields=["outcome", "ended_at"])
    task.state = TaskState.DONE
    task.save(update_fields=["state"])
    # The response is now partly scored: its remaining tasks go to the front of every queue.
    ScoringTask.objects.filter(pk__in=list(tasks), queue_rank=1).exclude(pk=task.pk).update(
        queue_rank=0
    )
    if task.kind == TaskKind.PRIMARY:
        _adjudicate_if_needed(task=task)
    return score, True


def _may_score(*, reviewer: User, version_id: int) -> bool:
    """The reviewer role is still held on the version's protocol and it is not withdrawn."""
    return ProtocolVersion.objects.filter(
        pk=version_id,
        withdrawal__isnull=True,
        protocol__memberships__user=reviewer,
        protocol__memberships__role=Role.REVIEWER,
    ).exists()


@transaction.atomic
def score_correct(*, score: Score, reviewer: User, values: dict[str, Any], reason: str) -> Score:
    """Correct a submitted score: a new Score that names the one it corrects and why.

    The original is kept unchanged. Only its reviewer corrects a score, and only the score as it
    now stands (the latest correction). Writes a ``score_correction`` entry to the deviation log
    and re-applies the disagreement rule. Raises ValidationError without a reason.
    """
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": ["A correction needs a reason."]})
    lock_reviewer(reviewer)
    if score.reviewer_id != reviewer.pk:
        raise NotFound(NO_SUCH_TASK)
    tasks = _lock_response_tasks(score.response_id)
    task = tasks[score.task_id]
    scoring_refusal_check(reviewer=reviewer, version_id=task.version_id)
    if Score.objects.filter(corrects=score).exists():
        raise ValidationError("This score has been corrected already: correct the correction.")
    correction = Score(
        task=task,
        version_id=score.version_id,
        response_id=score.response_id,
        reviewer=reviewer,
        values=_clean(task=task, values=values),
        idempotency_key=secrets.token_hex(16),
        corrects=score,
        correction_reason=reason,
    )
    correction.full_clean(exclude=_FOREIGN_KEYS, validate_unique=False, validate_constraints=False)
    correction.save()
    version = task.version
    version_log_append(
        version,
        kind=EntryKind.SCORE_CORRECTION,
        rationale=reason,
        actor=reviewer,
        refs=[
            {"type": "score", "id": score.pk, "label": f"score {score.pk}"},
            {"type": "score", "id": correction.pk, "label": f"correction {correction.pk}"},
        ],
    )
    if task.kind == TaskKind.PRIMARY:
        _adjudicate_if_needed(task=task)
    return correction
