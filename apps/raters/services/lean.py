"""The queue's claim and submit on PostgreSQL: a few prepared statements instead of the ORM.

Why: a next + score cycle through the ORM was 29 statements, each compiled by Django and planned
by PostgreSQL from scratch (docs/performance.md). Here each of next and submit is a transaction of
two statements, sent through the connection's psycopg cursor as server-side prepared statements
(planned once per connection):

next
    1. ``_NEXT_LOCK``: the reviewer's advisory lock (transaction-scoped, so it works under a
       transaction-mode pooler), the API token's validity when the request came with one, and
       the versions the reviewer may score now (scoring open, not withdrawn, the reviewer role
       held now), each marked whether it is in the study chosen.
    2. the claim (``_claim_sql``): the reviewer's live reservation in any of those versions (one
       at a time, whatever study was chosen); otherwise one open task of the chosen study
       locked with ``FOR UPDATE SKIP LOCKED`` in the reviewer's order, marked assigned and given
       its token if this is its first reservation, the assignment inserted — and the prompt and
       response text the page shows, returned. (The final SELECT reads the task as it was before
       the statement, so the token comes from the ``claimed`` CTE.)
submit
    1. ``_SUBMIT_LOCK``: the reviewer's advisory lock, then the response's tasks locked
       ``FOR UPDATE`` (in id order), returning what checking the values needs.
    2. ``_SUBMIT_WRITE``: the score inserted only if the reviewer's latest assignment of the task
       is live, the token still valid and the reviewer role still held; the assignment ended;
       the task done; the response's other tasks moved to the front of every queue.

Locks are taken in the order reviewer (advisory) → tasks → assignments, as the ORM paths take
them (``queue.py``), and each writing statement starts after the locks it depends on are held,
so its snapshot sees every committed change to those rows. Anything unusual (an expired
reservation, a repeat, a refusal) is handed back to the ORM path, which gives the exact answer
and error message; this module only takes the common case faster, never decides differently.

Work that cannot apply at the plan's k is skipped: at k = 1 no response is ever partly scored
and no two primary scores can disagree, so neither the partly-scored claim nor the adjudication
check runs.
"""

import json
import secrets
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, TypeVar

import psycopg
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Model
from psycopg.types.json import Jsonb

from apps.raters.frozen import FrozenRating, frozen_rating
from apps.raters.models import ScoringTask

M = TypeVar("M", bound=Model)

REVIEWER_LOCK_NAMESPACE = 7_301_007

_NEXT_LOCK = """
SELECT l.token_ok, v.id, v.sha256, v.chosen
FROM (
    SELECT pg_advisory_xact_lock(%(ns)s::int4, %(reviewer)s::int4)::text AS locked,
           (%(key)s::text IS NULL OR EXISTS (
               SELECT 1 FROM authtoken_token k JOIN accounts_user u ON u.id = k.user_id
               WHERE k.key = %(key)s AND k.user_id = %(reviewer)s AND u.is_active)) AS token_ok
) l
LEFT JOIN LATERAL (
    SELECT pv.id, pv.sha256,
           (%(queue)s::text IS NULL OR EXISTS (
               SELECT 1 FROM raters_studyqueue q
               WHERE q.protocol_id = pv.protocol_id AND q.token = %(queue)s)) AS chosen
    FROM protocols_protocolversion pv
    WHERE l.token_ok AND l.locked = ''
      AND EXISTS (SELECT 1 FROM raters_scoringopening o WHERE o.version_id = pv.id)
      AND NOT EXISTS (SELECT 1 FROM raters_scoringclosing c WHERE c.version_id = pv.id)
      AND NOT EXISTS (SELECT 1 FROM protocols_withdrawal w WHERE w.version_id = pv.id)
      AND EXISTS (SELECT 1 FROM accounts_membership m WHERE m.protocol_id = pv.protocol_id
                  AND m.user_id = %(reviewer)s AND m.role = 'reviewer')
) v ON true
ORDER BY v.id
"""

# An open task this reviewer may take: not a response they hold, scored or skipped
# (``models.HOLDS_RESPONSE``), not excluded.
_ELIGIBLE = """
  AND NOT EXISTS (SELECT 1 FROM raters_assignment h WHERE h.response_id = t.response_id
                  AND h.reviewer_id = %(reviewer)s
                  AND h.outcome IN ('active', 'submitted', 'skipped'))
  AND NOT EXISTS (SELECT 1 FROM responses_exclusion e
                  JOIN responses_response er ON er.attempt_id = e.attempt_id
                  WHERE er.id = t.response_id)
"""


@lru_cache(maxsize=64)
def _claim_sql(partly_scored: tuple[bool, ...]) -> str:
    """The claim for ``len(partly_scored)`` versions in the reviewer's order, each with its own
    offset: partly scored responses first (in every version whose flag is set, that is k ≥ 2,
    in version order), then each version's fresh tasks; within each, from the reviewer's offset
    up, then below it. Every candidate CTE is one version, one queue rank and one side of the
    offset, so it is a range of ``scoringtask_queue`` read in its own order and stops at its
    first eligible row; the UNION ALL under LIMIT 1 reads the next CTE only when the ones before
    it found nothing. (One CTE over every version's partly scored tasks, ordered by the offset's
    side, was sorted whole: 23.6 ms against 0.14 ms for the first row of a 20,000-response k = 2
    study with 1,437 partly scored tasks; docs/performance.md.)"""
    ctes = []
    branches = []
    ranks = [(0, i) for i, partly in enumerate(partly_scored) if partly]
    ranks += [(1, i) for i in range(len(partly_scored))]
    for rank, i in ranks:
        for side, compare in (("a", ">="), ("b", "<")):
            name = f"c{i}{'p' if rank == 0 else ''}{side}"
            ctes.append(
                f"""{name} AS (
  SELECT t.id FROM raters_scoringtask t
  WHERE t.version_id = %(v{i})s AND t.state = 'open' AND t.queue_rank = {rank}
    AND t.shuffle_key {compare} %(o{i})s {_ELIGIBLE}
  ORDER BY t.shuffle_key, t.id
  LIMIT 1 FOR UPDATE SKIP LOCKED)"""
            )
            branches.append(f"SELECT id FROM {name}")
    # No version chosen: nothing to claim, only a reservation held elsewhere to return.
    pick = (
        f"pick AS (SELECT id FROM ({' UNION ALL '.join(branches)}) u LIMIT 1)"
        if branches
        else "pick AS (SELECT NULL::bigint AS id WHERE false)"
    )
    return _compact(f"""
WITH cur AS (
  SELECT a.id, a.task_id, a.expires_at, a.reserved_at FROM raters_assignment a
  WHERE a.reviewer_id = %(reviewer)s AND a.outcome = 'active'
    AND a.version_id = ANY(%(held)s::bigint[])
  ORDER BY a.id LIMIT 1),
{"".join(cte + "," for cte in ctes)}
{pick},
claimed AS (
  UPDATE raters_scoringtask t SET state = 'assigned', token = COALESCE(t.token, %(token)s)
  FROM pick WHERE t.id = pick.id AND NOT EXISTS (SELECT 1 FROM cur)
  RETURNING t.id, t.version_id, t.response_id, t.token),
inserted AS (
  INSERT INTO raters_assignment
    (task_id, version_id, response_id, reviewer_id, reserved_at, expires_at, outcome)
  SELECT c.id, c.version_id, c.response_id, %(reviewer)s, now(),
         now() + make_interval(mins => m.minutes), 'active'
  FROM claimed c
  JOIN unnest(%(vids)s::bigint[], %(minutes)s::int[]) AS m(vid, minutes) ON m.vid = c.version_id
  RETURNING id, task_id, reserved_at, expires_at),
chosen AS (
  SELECT id, task_id, reserved_at, expires_at, false AS fresh, NULL::text AS token FROM cur
  UNION ALL
  SELECT i.id, i.task_id, i.reserved_at, i.expires_at, true, c.token
  FROM inserted i JOIN claimed c ON c.id = i.task_id)
SELECT ch.id, ch.fresh, ch.reserved_at, ch.expires_at, t.id, COALESCE(ch.token, t.token),
       t.version_id,
       t.response_id, t.kind, t.slot, t.shuffle_key, r.text, ce.prompt, ce.id
FROM chosen ch
JOIN raters_scoringtask t ON t.id = ch.task_id
JOIN responses_response r ON r.id = t.response_id
JOIN responses_attempt at ON at.id = r.attempt_id
JOIN responses_administration ad ON ad.id = at.administration_id
JOIN items_cell ce ON ce.id = ad.cell_id
""")


def _compact(sql: str) -> str:
    """``sql`` with each run of white space as one space (the statements here hold no comments
    and no literal with two spaces). psycopg caches its parse of a statement's placeholders
    only up to 4,096 bytes (``psycopg._queries.MAX_CACHED_STATEMENT_LENGTH``), and parses a
    longer one again on every execution: the claim for one k = 2 version was 4,155 bytes laid
    out, 287 Python calls more per cycle than at k = 1 (docs/performance.md)."""
    return " ".join(sql.split())


_SUBMIT_LOCK = """
SELECT x.id, x.token, x.version_id, x.response_id, x.kind, x.state, x.slot, x.shuffle_key,
       pv.sha256, r.word_count, ad.cell_id
FROM (SELECT pg_advisory_xact_lock(%(ns)s::int4, %(reviewer)s::int4)::text AS locked) l
JOIN LATERAL (
    SELECT t.id, t.token, t.version_id, t.response_id, t.kind, t.state, t.slot, t.shuffle_key
    FROM raters_scoringtask t
    WHERE l.locked = ''
      AND t.response_id = (SELECT s.response_id FROM raters_scoringtask s WHERE s.token = %(token)s)
    ORDER BY t.id FOR UPDATE
) x ON true
JOIN protocols_protocolversion pv ON pv.id = x.version_id
JOIN responses_response r ON r.id = x.response_id
JOIN responses_attempt at ON at.id = r.attempt_id
JOIN responses_administration ad ON ad.id = at.administration_id
"""

_SUBMIT_WRITE = """
WITH a AS (
  SELECT id, outcome FROM raters_assignment
  WHERE task_id = %(task)s AND reviewer_id = %(reviewer)s
  ORDER BY reserved_at DESC, id DESC LIMIT 1),
allowed AS (
  SELECT a.id FROM a
  WHERE a.outcome = 'active'
    AND EXISTS (SELECT 1 FROM accounts_membership m
                JOIN protocols_protocolversion pv ON pv.protocol_id = m.protocol_id
                WHERE pv.id = %(version)s AND m.user_id = %(reviewer)s AND m.role = 'reviewer')
    AND NOT EXISTS (SELECT 1 FROM protocols_withdrawal w WHERE w.version_id = %(version)s)
    AND NOT EXISTS (SELECT 1 FROM raters_scoringclosing c WHERE c.version_id = %(version)s)
    AND (%(key)s::text IS NULL OR EXISTS (
             SELECT 1 FROM authtoken_token k JOIN accounts_user u ON u.id = k.user_id
             WHERE k.key = %(key)s AND k.user_id = %(reviewer)s AND u.is_active))),
score AS (
  INSERT INTO raters_score (task_id, version_id, response_id, reviewer_id, values,
                            idempotency_key, seconds_spent, submitted_at, correction_reason)
  SELECT %(task)s, %(version)s, %(response)s, %(reviewer)s, %(values)s, %(idem)s,
         %(seconds)s, now(), ''
  FROM allowed
  ON CONFLICT DO NOTHING
  RETURNING id, submitted_at),
ended AS (
  UPDATE raters_assignment SET outcome = 'submitted', ended_at = now()
  FROM score WHERE raters_assignment.id = (SELECT id FROM allowed)
  RETURNING raters_assignment.id),
tasks AS (
  UPDATE raters_scoringtask t
  SET state = CASE WHEN t.id = %(task)s THEN 'done' ELSE t.state END,
      queue_rank = CASE WHEN t.id = %(task)s THEN t.queue_rank ELSE 0 END
  FROM score
  WHERE t.response_id = %(response)s AND (t.id = %(task)s OR t.queue_rank = 1)
  RETURNING t.id)
SELECT score.id, score.submitted_at, (SELECT count(*) FROM ended), (SELECT count(*) FROM tasks)
FROM score
"""


# The response's primary scores as they now stand (each replaced by its latest correction), in
# slot order: ``selectors.effective_scores`` for the disagreement rule, without the ORM's query
# building (2,300 Python calls per k-th score at k = 2; docs/performance.md).
_PRIMARY_VALUES = _compact("""
SELECT s.values FROM raters_score s
JOIN raters_scoringtask t ON t.id = s.task_id
WHERE s.response_id = %(response)s AND t.kind = 'primary'
  AND NOT EXISTS (SELECT 1 FROM raters_score c WHERE c.corrects_id = s.id)
ORDER BY t.slot, s.id
""")


def primary_values(*, response_id: int) -> list[dict[str, Any]]:
    """The values of the response's primary scores as they now stand, in slot order (a list of
    ``{field name: value}``), as ``selectors.effective_scores`` gives them. The caller holds
    the response's tasks locked, so no primary score of it can change meanwhile."""
    # Django's connection loads jsonb as text (its JSONField decodes it): decode it the same way.
    return [
        json.loads(row[0]) if isinstance(row[0], str) else row[0]
        for row in _rows(_PRIMARY_VALUES, {"response": response_id})
    ]


def new_token() -> str:
    """An opaque task id, given when a task is first reserved: 128 random bits, URL-safe
    (22 characters)."""
    return secrets.token_urlsafe(16)


def available() -> bool:
    """Whether the lean statements can run here (PostgreSQL); elsewhere the ORM path runs."""
    return connection.vendor == "postgresql"


def _cursor() -> "psycopg.Cursor[Any]":
    """A server-binding psycopg cursor (Django's own bind client-side and cannot be prepared) on
    the connection Django has open, kept for as long as that connection lives: a new cursor per
    statement cost its construction and a new adaptation context (psycopg's ``Transformer``,
    kept by a cursor while it runs the same statement text) on every statement."""
    # The wrapper itself, looked up once: each attribute read through ``django.db.connection``
    # looks it up again (about a dozen Python calls each, on every statement).
    wrapper = connections[DEFAULT_DB_ALIAS]
    if wrapper.connection is None:
        wrapper.ensure_connection()
    raw = wrapper.connection
    cursor: psycopg.Cursor[Any] | None = getattr(wrapper, "_lean_cursor", None)
    if cursor is None or cursor.connection is not raw or cursor.closed:
        cursor = psycopg.Cursor(raw)
        wrapper._lean_cursor = cursor  # type: ignore[attr-defined]
    return cursor


def _rows(sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    # In the transaction Django has open on the same connection.
    cursor = _cursor()
    cursor.execute(sql, params, prepare=bool(settings.DB_PREPARED_STATEMENTS))
    # Every statement here is a SELECT or ends in one, so it has rows to fetch (none is an empty
    # list); asking ``description`` first would build its column objects each time.
    return cursor.fetchall()


@dataclass(frozen=True)
class QueueVersion:
    version_id: int
    sha256: str
    rating: FrozenRating
    chosen: bool  # in the study the request asked for (every version when it asked for any)


class TokenRevoked(Exception):
    """The API token a request came with no longer exists or its user is inactive."""


def lock_and_versions(
    *, reviewer_id: int, queue: str | None, token_key: str | None
) -> list[QueueVersion]:
    """Take the reviewer's advisory lock and return every version the reviewer may score now,
    in id order, each marked ``chosen`` when it is in ``queue``'s study (``queue``: a
    ``StudyQueue.token``, or None for any study: then all are chosen). Raises TokenRevoked."""
    rows = _rows(
        _NEXT_LOCK,
        {
            "ns": REVIEWER_LOCK_NAMESPACE,
            "reviewer": reviewer_id,
            "key": token_key,
            "queue": queue,
        },
    )
    if not rows or not rows[0][0]:
        raise TokenRevoked
    return [
        QueueVersion(
            version_id=vid,
            sha256=sha,
            rating=frozen_rating(version_id=vid, sha256=sha),
            chosen=chosen,
        )
        for _, vid, sha, chosen in rows
        if vid is not None
    ]


@dataclass(frozen=True)
class Shown:
    """What a claim already read of its task's page: the cell's prompt and the response text
    (``selectors.task_content`` uses it instead of reading them again)."""

    prompt: str
    text: str
    cell_id: int
    sha256: str


@dataclass(frozen=True)
class Claim:
    assignment_id: int
    fresh: bool
    reserved_at: datetime
    expires_at: datetime
    task_id: int
    token: str
    version_id: int
    response_id: int
    kind: str
    slot: int
    shuffle_key: int
    response_text: str
    prompt: str
    cell_id: int


def claim(
    *, reviewer_id: int, versions: list[QueueVersion], offsets: list[int], held: list[int]
) -> Claim | None:
    """The reviewer's live reservation in any of the versions ``held`` (``fresh`` False), or
    else a task newly reserved from ``versions`` (True), with what its page shows; None when
    nothing is open to them. The caller holds the advisory lock."""
    params: dict[str, Any] = {
        "reviewer": reviewer_id,
        "held": held,
        "vids": [v.version_id for v in versions],
        "minutes": [v.rating.plan.reservation_minutes for v in versions],
        "token": new_token(),
    }
    for i, (v, offset) in enumerate(zip(versions, offsets, strict=True)):
        params[f"v{i}"] = v.version_id
        params[f"o{i}"] = offset
    partly = tuple(v.rating.plan.k >= 2 for v in versions)
    rows = _rows(_claim_sql(partly), params)
    if not rows:
        return None
    return Claim(*rows[0])


@dataclass(frozen=True)
class LockedTask:
    id: int
    token: str
    version_id: int
    response_id: int
    kind: str
    state: str
    slot: int
    shuffle_key: int


@dataclass(frozen=True)
class SubmitTarget:
    task: LockedTask
    siblings: list[LockedTask]
    sha256: str
    word_count: int
    cell_id: int


def stored(instance: M) -> M:
    """``instance``, built from a row these statements just read or wrote, marked as that row
    (so that the ORM treats it as loaded: a later ``save()`` updates it, never inserts it)."""
    instance._state.adding = False
    instance._state.db = "default"
    return instance


_TASK_COLUMNS = ("token", "version_id", "response_id", "kind", "slot", "shuffle_key")


def task_instance(task_id: int, source: Claim | LockedTask, state: str) -> ScoringTask:
    """The ScoringTask row that ``source`` read (a claim, or a task locked for a submission),
    in ``state``, without reading it again."""
    return stored(
        ScoringTask(id=task_id, state=state, **{c: getattr(source, c) for c in _TASK_COLUMNS})
    )


def lock_for_submit(*, reviewer_id: int, token: str) -> SubmitTarget | None:
    """Take the reviewer's advisory lock, then lock the tasks of the response behind ``token``;
    None when no task has that token."""
    rows = _rows(
        _SUBMIT_LOCK, {"ns": REVIEWER_LOCK_NAMESPACE, "reviewer": reviewer_id, "token": token}
    )
    tasks = [LockedTask(*row[:8]) for row in rows]
    for task, row in zip(tasks, rows, strict=True):
        if task.token == token:
            return SubmitTarget(
                task=task,
                siblings=[t for t in tasks if t.id != task.id],
                sha256=row[8],
                word_count=row[9],
                cell_id=row[10],
            )
    return None


def write_score(
    *,
    target: SubmitTarget,
    reviewer_id: int,
    values: dict[str, Any],
    idempotency_key: str,
    seconds_spent: int | None,
    token_key: str | None,
) -> tuple[int, datetime] | None:
    """Insert the score and end the reservation if the reviewer's latest assignment of the task
    is live, the reviewer role is still held, the version not withdrawn and the token valid;
    returns (score id, submitted at), or None having written nothing."""
    rows = _rows(
        _SUBMIT_WRITE,
        {
            "task": target.task.id,
            "version": target.task.version_id,
            "response": target.task.response_id,
            "reviewer": reviewer_id,
            "values": Jsonb(values),
            "idem": idempotency_key,
            "seconds": seconds_spent,
            "key": token_key,
        },
    )
    if not rows:
        return None
    return rows[0][0], rows[0][1]
