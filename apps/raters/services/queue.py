"""Opening scoring, the reviewer's queue, reservations and their expiry.

How the queue serves a task (``task_next``)
--------------------------------------------
1. A reviewer's calls are serialised by a PostgreSQL advisory lock on the reviewer, so a double
   click or two tabs never reserve two tasks.
2. An unexpired active reservation is returned as it is: a refresh gets the same task.
3. Otherwise one open task is reserved with ``SELECT … FOR UPDATE SKIP LOCKED`` (concurrent
   reviewers skip each other's candidate rows instead of waiting on them), and in the same
   transaction the task becomes ``assigned`` and the ``Assignment`` is written.

When nothing is open, reservations whose expiry has passed are freed lazily (bounded) and the
claim is tried again; Celery beat frees them every minute in any case.

Candidates are the open tasks of the versions where the reviewer holds the reviewer role and
scoring is open, minus responses the reviewer holds or has scored (a reviewer never scores one
response twice, so an adjudication task always goes to someone who scored neither original), minus
excluded responses. Order: partly scored responses first (``queue_rank`` 0), then the
reviewer's own pseudo-random order: ``shuffle_key`` (a keyed hash of the plan's seed and the
response) read from a per-reviewer starting point (a keyed hash of the seed and the reviewer),
wrapping round. Fresh tasks are read by two range scans of the partial index
``scoringtask_queue``; partly scored ones (few at any time) by one query that sorts them.

A reviewer whose own reservation expired may be served that response again: they never scored
it, and with exactly k reviewers a response could otherwise never be finished.

Locks are always taken in the order reviewer (advisory) → tasks (by id) → assignments, by every
path here and in scoring, so no two transactions wait on each other in a cycle.
"""

import enum
import functools
import hashlib
import hmac
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from apps.accounts.models import User
from apps.core.errors import NotFound
from apps.core.rows import full_clean_save
from apps.protocols.models import ProtocolVersion
from apps.raters.frozen import frozen_rating
from apps.raters.models import (
    Assignment,
    AssignmentOutcome,
    Rubric,
    ScoringOpening,
    ScoringTask,
    SkipReason,
    TaskKind,
    TaskState,
)
from apps.raters.plan import RatingPlan, rating_plan
from apps.raters.selectors import (
    NO_SUCH_TASK,
    active_assignment,
    audited_response_ids,
    claim_queryset,
    excluded_response_ids,
    queue_versions,
    reviewers_score_any_field,
    token_valid,
)
from apps.raters.services import lean
from apps.responses.models import Response

# Namespace of the per-reviewer advisory locks (an arbitrary constant, distinct from the log's).
_REVIEWER_LOCK_NAMESPACE = lean.REVIEWER_LOCK_NAMESPACE
# Expired reservations freed lazily by a call to next that finds nothing open (beat frees the
# rest every minute).
_LAZY_EXPIRY_LIMIT = 100


def keyed_order(seed: int, message: str) -> int:
    """A 63-bit number from HMAC-SHA256 keyed by the plan's seed: deterministic given the seed,
    unpredictable without it, and unrelated to design order (family, level, condition)."""
    digest = hmac.new(str(seed).encode(), message.encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def shuffle_key_for(*, seed: int, response_id: int) -> int:
    """A response's place in every reviewer's order: ``keyed_order(seed, "response:<id>")``."""
    return keyed_order(seed, f"response:{response_id}")


@functools.lru_cache(maxsize=65_536)
def reviewer_offset(*, seed: int, reviewer_id: int) -> int:
    """Where in the shuffle order a reviewer starts: ``keyed_order(seed, "reviewer:<id>")``
    (kept per process: a pure function of its arguments, asked on every next)."""
    return keyed_order(seed, f"reviewer:{reviewer_id}")


def lock_reviewer(reviewer: User) -> None:
    """Serialise this reviewer's queue operations until the transaction ends (PostgreSQL)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(%s, %s)", [_REVIEWER_LOCK_NAMESPACE, reviewer.pk]
            )


@transaction.atomic
def scoring_open(*, version: ProtocolVersion, user: User) -> int:
    """Open scoring of a frozen version: k primary tasks per non-excluded response.

    k is the plan's ``scores_per_response``. Idempotent: responses that already have tasks are
    left alone, so calling it again after a later import gives only the new responses tasks.
    Returns the number of tasks created. Raises ValidationError when the version is a draft, is
    withdrawn, or has no rubric.
    """
    version = ProtocolVersion.objects.select_for_update().get(pk=version.pk)
    if version.is_draft:
        raise ValidationError("Scoring opens only on a frozen version: freeze it first.")
    if hasattr(version, "withdrawal"):
        raise ValidationError("This version is withdrawn: it cannot be scored.")
    if hasattr(version, "scoring_closing"):
        raise ValidationError(
            f"Scoring of v{version.label} was closed: {version.scoring_closing.reason}."
        )
    if not Rubric.objects.filter(version=version).exists():
        raise ValidationError("This version has no rubric: nothing says how to score.")
    if not ScoringOpening.objects.filter(version=version).exists():
        opening = ScoringOpening(version=version, opened_by=user)
        full_clean_save(opening)
    from apps.raters.services.study_queue import study_queue_ensure

    study_queue_ensure(protocol=version.protocol)
    plan = rating_plan(version)
    response_ids = (
        Response.objects.filter(version=version)
        .exclude(pk__in=excluded_response_ids(version))
        .exclude(Exists(ScoringTask.objects.filter(response=OuterRef("pk"))))
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    # Machine scoring: the plan's human audit sample is drawn now; when reviewers score no field
    # but through the audit, only the sample's responses get tasks. (Imported here: the audit
    # module orders the sample with this module's keyed hash.)
    from apps.raters.services.audit import audit_sample_draw

    audit_sample_draw(version=version)
    if not reviewers_score_any_field(version):
        response_ids = response_ids.filter(pk__in=audited_response_ids(version))
    return _tasks_create(version=version, k=plan.k, seed=plan.seed, response_ids=list(response_ids))


# Rows per INSERT on PostgreSQL: large enough to be set-based, small enough for modest memory.
_OPEN_CHUNK = 50_000


def _tasks_create(*, version: ProtocolVersion, k: int, seed: int, response_ids: list[int]) -> int:
    """k primary tasks for each of ``response_ids``; the number created.

    On PostgreSQL one ``INSERT … SELECT`` per 50,000 responses over arrays of response ids and
    shuffle keys (``unnest`` × ``generate_series(1, k)``): the keyed hash is computed here,
    everything else by the database. Rows go in shuffle-key order, so the two queue indexes
    (which lead with version and end in the shuffle key) grow at their right edge instead of
    at random pages. No token is written: a task gets its token when first reserved
    (``lean.claim``, ``_reserve``). Elsewhere ``bulk_create``.
    """
    keyed = sorted((shuffle_key_for(seed=seed, response_id=rid), rid) for rid in response_ids)
    keys = [key for key, _ in keyed]
    response_ids = [rid for _, rid in keyed]
    if connection.vendor != "postgresql":
        tasks = [
            ScoringTask(
                version=version,
                response_id=rid,
                kind=TaskKind.PRIMARY,
                slot=slot,
                shuffle_key=key,
            )
            for rid, key in zip(response_ids, keys, strict=True)
            for slot in range(1, k + 1)
        ]
        ScoringTask.objects.bulk_create(tasks, batch_size=5000)
        return len(tasks)
    created = 0
    connection.ensure_connection()
    with connection.connection.cursor() as cursor:
        for start in range(0, len(response_ids), _OPEN_CHUNK):
            ids = response_ids[start : start + _OPEN_CHUNK]
            chunk_keys = keys[start : start + _OPEN_CHUNK]
            # One row per (response, slot): the arrays unnested side by side, crossed with the
            # slots, in shuffle-key order.
            cursor.execute(
                "INSERT INTO raters_scoringtask "
                "(version_id, response_id, kind, slot, state, shuffle_key, queue_rank, "
                " created_at) "
                "SELECT %(version)s, u.rid, 'primary', s.slot, 'open', u.key, 1, now() "
                "FROM unnest(%(ids)s::bigint[], %(keys)s::bigint[]) AS u(rid, key) "
                "CROSS JOIN generate_series(1, %(k)s) AS s(slot) "
                "ORDER BY u.key, u.rid, s.slot",
                {"version": version.pk, "ids": ids, "keys": chunk_keys, "k": k},
            )
            created += cursor.rowcount
    return created


def _expire_tasks(*, task_ids: Sequence[int], now: datetime) -> int:
    """End the expired active reservations on ``task_ids`` (already locked) and reopen them."""
    if not task_ids:
        return 0
    ended = Assignment.objects.filter(
        task_id__in=task_ids, outcome=AssignmentOutcome.ACTIVE, expires_at__lte=now
    ).update(outcome=AssignmentOutcome.EXPIRED, ended_at=now)
    ScoringTask.objects.filter(id__in=task_ids, state=TaskState.ASSIGNED).exclude(
        Exists(Assignment.objects.filter(task=OuterRef("pk"), outcome=AssignmentOutcome.ACTIVE))
    ).update(state=TaskState.OPEN)
    return ended


def assignments_expire(
    *,
    now: datetime | None = None,
    version_ids: Sequence[int] | None = None,
    limit: int | None = None,
) -> int:
    """Return every reservation whose expiry has passed to the pool; the number freed.

    Runs every minute from Celery beat (``raters.assignments_expire``) and, bounded, lazily at
    the start of ``task_next``. Tasks held by a transaction in progress (being scored or
    reserved) are skipped, not waited for; the next run takes them.
    """
    now = now or timezone.now()
    with transaction.atomic():
        due = ScoringTask.objects.filter(
            state=TaskState.ASSIGNED,
            assignments__outcome=AssignmentOutcome.ACTIVE,
            assignments__expires_at__lte=now,
        )
        if version_ids is not None:
            due = due.filter(version_id__in=version_ids)
        due = due.order_by("pk").select_for_update(skip_locked=True, of=("self",))
        if limit is not None:
            due = due[:limit]
        task_ids = list(due.values_list("pk", flat=True))
        return _expire_tasks(task_ids=task_ids, now=now)


def _claim(
    *, version_id: int, reviewer: User, rank: int, offset: int, wrapped: bool | None
) -> ScoringTask | None:
    return claim_queryset(
        version_id=version_id, reviewer=reviewer, rank=rank, offset=offset, wrapped=wrapped
    ).first()


def _claim_in_order(
    *,
    versions: Sequence[ProtocolVersion],
    plans: dict[int, RatingPlan],
    reviewer: User,
) -> ScoringTask | None:
    # Partly scored responses first (all versions), then fresh ones, each in the reviewer's order.
    # At k = 1 no response is ever partly scored (nor adjudicated): rank 0 is not asked for.
    order: tuple[tuple[int, tuple[bool | None, ...]], ...] = ((0, (None,)), (1, (False, True)))
    for rank, segments in order:
        for version in versions:
            if rank == 0 and plans[version.pk].k < 2:
                continue
            offset = reviewer_offset(seed=plans[version.pk].seed, reviewer_id=reviewer.pk)
            for wrapped in segments:
                task = _claim(
                    version_id=version.pk,
                    reviewer=reviewer,
                    rank=rank,
                    offset=offset,
                    wrapped=wrapped,
                )
                if task is not None:
                    return task
    return None


def _lean_assignment(claimed: lean.Claim, reviewer: User, sha256: str) -> Assignment:
    """The Assignment (and its task) the lean claim returned, as model instances, without
    reading them again; the task carries the content its page shows (``task_content``)."""
    task = lean.task_instance(claimed.task_id, claimed, TaskState.ASSIGNED)
    # A transient attribute, not a field: task_content reads it with getattr (no model change).
    task.shown = lean.Shown(  # type: ignore[attr-defined]
        prompt=claimed.prompt, text=claimed.response_text, cell_id=claimed.cell_id, sha256=sha256
    )
    return lean.stored(
        Assignment(
            id=claimed.assignment_id,
            task=task,
            version_id=claimed.version_id,
            response_id=claimed.response_id,
            reviewer=reviewer,
            reserved_at=claimed.reserved_at,
            expires_at=claimed.expires_at,
            outcome=AssignmentOutcome.ACTIVE,
        )
    )


class _FallBack(enum.Enum):
    """The lean path's answer when the ORM path must serve the call instead."""

    FALL_BACK = 0


_FALL_BACK = _FallBack.FALL_BACK


def _task_next_lean(
    *, reviewer: User, queue: str | None, token_key: str | None
) -> Assignment | _FallBack | None:
    versions = lean.lock_and_versions(reviewer_id=reviewer.pk, queue=queue, token_key=token_key)
    if not versions:
        return None
    chosen = [v for v in versions if v.chosen]
    offsets = [reviewer_offset(seed=v.rating.plan.seed, reviewer_id=reviewer.pk) for v in chosen]
    held = [v.version_id for v in versions]

    def claimed_now() -> lean.Claim | None:
        return lean.claim(reviewer_id=reviewer.pk, versions=chosen, offsets=offsets, held=held)

    claimed = claimed_now()
    if (
        claimed is None
        and chosen
        and assignments_expire(version_ids=[v.version_id for v in chosen], limit=_LAZY_EXPIRY_LIMIT)
    ):
        claimed = claimed_now()
    if claimed is None:
        return None
    if not claimed.fresh and claimed.expires_at <= timezone.now():
        return _FALL_BACK  # an expired reservation to end first: the ORM path does it
    sha = next(v.sha256 for v in versions if v.version_id == claimed.version_id)
    return _lean_assignment(claimed, reviewer, sha)


@transaction.atomic
def task_next(
    *,
    version_or_none: ProtocolVersion | None = None,
    reviewer: User,
    queue: str | None = None,
    token_key: str | None = None,
    release_held: bool = False,
) -> Assignment | None:
    """Reserve the reviewer's next scoring task and return the reservation (``None`` when no
    task is open for them).

    Returns the reviewer's live reservation unchanged when there is one (a refresh gets the same
    task), in whichever study it is: a reviewer holds one reservation at a time. With
    ``release_held`` that reservation is first given back (``reservation_release``, in the same
    transaction): how a reviewer moves to another study while holding a task. ``queue`` (a
    ``StudyQueue.token``; None for any study) restricts the queue to one study. ``token_key``
    is the API token the request came with: it is checked again in the claim's own statement,
    so a revoked token that an authentication cache still holds reserves nothing (raises
    ``lean.TokenRevoked``). See the module docstring for the order and the locking; on
    PostgreSQL the common case runs as two prepared statements (``lean.py``).
    """
    if release_held:
        reservation_release(reviewer=reviewer)
    if version_or_none is None and lean.available():
        found = _task_next_lean(reviewer=reviewer, queue=queue, token_key=token_key)
        if found is not _FALL_BACK:
            return found
    lock_reviewer(reviewer)
    if not token_valid(reviewer=reviewer, token_key=token_key):
        raise lean.TokenRevoked
    versions = list(queue_versions(reviewer=reviewer, version=version_or_none, queue=queue))
    version_ids = [v.pk for v in versions]
    now = timezone.now()
    # One reservation at a time: a live one in another study is returned whatever was asked for.
    held_ids = (
        version_ids
        if queue is None
        else [v.pk for v in queue_versions(reviewer=reviewer, version=version_or_none)]
    )
    current = active_assignment(reviewer=reviewer, version_ids=held_ids)
    if current is not None:
        if current.expires_at > now:
            return current
        locked = list(
            ScoringTask.objects.select_for_update()
            .filter(pk=current.task_id)
            .values_list("pk", flat=True)
        )
        _expire_tasks(task_ids=locked, now=now)
    if not versions:
        return None
    plans = {
        v.pk: frozen_rating(version_id=v.pk, sha256=v.sha256, version=v).plan for v in versions
    }
    task = _claim_in_order(versions=versions, plans=plans, reviewer=reviewer)
    # Nothing open: reservations whose expiry passed are free too, even before beat's next run.
    if task is None and assignments_expire(
        now=now, version_ids=version_ids, limit=_LAZY_EXPIRY_LIMIT
    ):
        task = _claim_in_order(versions=versions, plans=plans, reviewer=reviewer)
    if task is None:
        return None
    return _reserve(task=task, reviewer=reviewer, now=now, plan=plans[task.version_id])


def _reserve(*, task: ScoringTask, reviewer: User, now: datetime, plan: RatingPlan) -> Assignment:
    assignment = Assignment(
        task=task,
        version_id=task.version_id,
        response_id=task.response_id,
        reviewer=reviewer,
        reserved_at=now,
        expires_at=now + timedelta(minutes=plan.reservation_minutes),
        outcome=AssignmentOutcome.ACTIVE,
    )
    assignment.save()
    task.state = TaskState.ASSIGNED
    task.token = task.token or lean.new_token()
    task.save(update_fields=["state", "token"])
    return assignment


def _end_reservation(assignment: Assignment, *, outcome: str, now: datetime) -> None:
    """End a live reservation (its task already locked) and return the task to the pool."""
    assignment.outcome = outcome
    assignment.ended_at = now
    assignment.save(update_fields=["outcome", "ended_at", "skip_reason"])
    ScoringTask.objects.filter(pk=assignment.task_id, state=TaskState.ASSIGNED).update(
        state=TaskState.OPEN
    )


@transaction.atomic
def task_skip(*, task_token: str, reviewer: User, reason: str = "") -> Assignment:
    """Give back, unscored, the task the reviewer holds behind ``task_token``; the ended
    reservation (outcome ``skipped``, with the reason) is returned.

    A skip is recorded, never a score: the task returns to the pool for other reviewers, and
    the queue never serves this response to this reviewer again (``HOLDS_RESPONSE``). ``reason``
    is one of ``SkipReason`` (empty: none given). Raises NotFound for a token the reviewer never
    held, ValidationError for a reason not on the list or a task no longer held (scored,
    skipped, or expired and taken by someone else).
    """
    if reason not in SkipReason.values:
        choices = ", ".join(v for v in SkipReason.values if v)
        raise ValidationError({"reason": [f"reason: give one of {choices}, or none"]})
    lock_reviewer(reviewer)
    task = ScoringTask.objects.select_for_update().filter(token=task_token).first()
    mine = Assignment.objects.filter(task=task, reviewer=reviewer) if task is not None else None
    if mine is None or not mine.exists():
        raise NotFound(NO_SUCH_TASK)
    assignment = mine.filter(outcome=AssignmentOutcome.ACTIVE).first()
    if assignment is None:
        raise ValidationError(
            "You no longer hold this task (it was scored, skipped, or its reservation ended): "
            "there is nothing to skip."
        )
    assignment.skip_reason = reason
    _end_reservation(assignment, outcome=AssignmentOutcome.SKIPPED, now=timezone.now())
    return assignment


@transaction.atomic
def reservation_release(*, reviewer: User) -> Assignment | None:
    """Give back the reviewer's live reservation, if any, unscored (outcome ``released``) and
    return it: the task goes back to the pool, where the reviewer too may get it again (unlike
    a skip). Used when the reviewer picks another study while holding a task."""
    lock_reviewer(reviewer)
    current = active_assignment(reviewer=reviewer)
    if current is None:
        return None
    list(ScoringTask.objects.select_for_update().filter(pk=current.task_id).values_list("pk"))
    _end_reservation(current, outcome=AssignmentOutcome.RELEASED, now=timezone.now())
    return current
