"""Writes of the deviation log and the outcome seal. ``deviation_append`` is the only way in."""

import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal, NamedTuple, overload

from django.core.exceptions import ValidationError
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from apps.accounts.models import User
from apps.core.canonical import canonical_json
from apps.core.rows import full_clean_save
from apps.deviations.chain import GENESIS_HASH, entry_hash
from apps.deviations.models import (
    MANUAL_KINDS,
    EntryKind,
    LogEntry,
    OutcomeUnsealing,
    PendingEntry,
)
from apps.deviations.selectors import protocol_outcomes_visible
from apps.protocols.models import Protocol, ProtocolVersion
from apps.protocols.refs import version_ref

logger = logging.getLogger(__name__)

# Namespace of the advisory locks that serialise appends per protocol (an arbitrary constant).
_ADVISORY_NAMESPACE = 7_301_001
_REF_KEY = re.compile(r"^[a-z][a-z0-9_]*$")
SYSTEM_ACTOR = "system"


def format_timestamp(moment: datetime) -> str:
    """An entry time as hashed and exported: UTC, microseconds, ``2026-11-30T01:50:00.000123Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _lock_protocol_log(protocol_id: int) -> None:
    """Hold the protocol's log lock until the surrounding transaction ends (PostgreSQL).

    Every append takes it before reading the last entry, so two appends to one protocol run one
    after the other and the chain can neither fork nor gap. On SQLite, which serialises writers
    itself, the unique (protocol, seq) constraint refuses the loser of a race instead.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(%s, %s)",
                [_ADVISORY_NAMESPACE, protocol_id % 2**31],
            )
        _sequence_after_commit(protocol_id)


# One round trip for everything an append reads, taken after the lock: under READ COMMITTED a
# statement that starts after pg_advisory_xact_lock returned sees every entry committed by the
# appender it waited for, and every entry staged by a transaction that has committed.
# clock_timestamp(), not now(): the lock may have been waited for, and entry times must rise
# along the chain. The protocol's code is the chain's (its first entry's), else the protocol's.
# "Anything staged?" reads the newest staged row, by a backward index scan: rows are deleted as
# they are chained, so the oldest index entries are dead until VACUUM, and a forward scan (or an
# index-only one, which never marks them dead) would step over all of them on every append.
_HEAD_SQL = """
    SELECT last.seq, last.hash, coalesce(last.protocol_code, p.code), clock_timestamp(),
           EXISTS (SELECT 1 FROM deviations_outcomeunsealing u
                   JOIN protocols_protocolversion v ON v.id = u.version_id
                   WHERE v.protocol_id = %(protocol)s),
           (SELECT kind FROM deviations_pendingentry WHERE protocol_id = %(protocol)s
            ORDER BY id DESC LIMIT 1) IS NOT NULL
    FROM protocols_protocol p
    LEFT JOIN LATERAL (SELECT seq, hash, protocol_code FROM deviations_logentry
                       WHERE protocol_id = %(protocol)s ORDER BY seq DESC LIMIT 1) AS last ON true
    WHERE p.id = %(protocol)s
"""


class _Head(NamedTuple):
    """What chaining reads under the lock: the last seq (0 for a new chain), its hash (the
    genesis hash), the chain's protocol code, the time now, whether outcomes were seen, and
    whether entries are staged for the protocol (always False on SQLite)."""

    seq: int
    hash: str
    code: str
    now: datetime
    visible: bool
    pending: bool


def _chain_head(protocol_id: int) -> _Head:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_HEAD_SQL, {"protocol": protocol_id})
            last_seq, last_hash, code, now, visible, pending = cursor.fetchone()
    else:
        last = (
            LogEntry.objects.filter(protocol_id=protocol_id)
            .order_by("-seq")
            .values_list("seq", "hash", "protocol_code")
            .first()
        )
        last_seq, last_hash, code = last or (None, None, None)
        code = code or Protocol.objects.values_list("code", flat=True).get(pk=protocol_id)
        now, visible = timezone.now(), protocol_outcomes_visible(protocol_id=protocol_id)
        pending = False
    if last_seq is None:
        return _Head(0, GENESIS_HASH, code, now, visible, pending)
    return _Head(last_seq, last_hash, code, now, visible, pending)


# PostgreSQL text cannot hold NUL, and a lone surrogate has no UTF-8 encoding.
_UNENCODABLE = re.compile("[\x00\ud800-\udfff]")


def _has_unencodable(text: str) -> bool:
    return _UNENCODABLE.search(text) is not None


def _clean_text(value: Any, *, field: str, required: bool) -> str:
    if not isinstance(value, str):
        raise ValidationError({field: f"{field} must be text, not {type(value).__name__}."})
    text: str = value.strip()
    if required and not text:
        raise ValidationError({field: f"A {field} is required: say what happened and why."})
    if _has_unencodable(text):
        raise ValidationError({field: f"{field} holds a NUL or unpaired surrogate character."})
    return text


def _clean_refs(refs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(refs, str | bytes | Mapping):
        raise ValidationError({"refs": "refs must be a list of {type, id, label} objects."})
    cleaned = []
    for position, ref in enumerate(refs, start=1):
        where = f"ref {position}"
        if not isinstance(ref, Mapping):
            raise ValidationError({"refs": f"{where} is not an object."})
        ref = dict(ref)
        ref_type, ref_id = ref.get("type"), ref.get("id")
        if not isinstance(ref_type, str) or not _REF_KEY.match(ref_type):
            raise ValidationError({"refs": f"{where} needs a type such as 'version'."})
        if isinstance(ref_id, bool) or not isinstance(ref_id, int | str) or ref_id == "":
            raise ValidationError({"refs": f"{where} ({ref_type}) needs an id (integer or text)."})
        if not isinstance(ref.setdefault("label", f"{ref_type} {ref_id}"), str):
            raise ValidationError({"refs": f"{where} ({ref_type}) has a label that is not text."})
        for key, value in ref.items():
            # Only flat, exactly-representable values: the offline verifier must rebuild the
            # same bytes without any of this code (no floats, no nesting).
            if not isinstance(key, str) or not _REF_KEY.match(key):
                raise ValidationError({"refs": f"{where} has a key {key!r}; use a-z, 0-9, _."})
            if value is not None and not isinstance(value, str | int):
                raise ValidationError(
                    {"refs": f"{where} field {key!r} must be text, an integer, true/false or null."}
                )
            if isinstance(value, str) and _has_unencodable(value):
                raise ValidationError({"refs": f"{where} field {key!r} holds a NUL character."})
        cleaned.append(ref)
    return cleaned


@dataclass(frozen=True)
class NewEntry:
    """One entry of a batch for ``deviation_append_many``: the arguments ``deviation_append``
    takes besides the protocol."""

    kind: str
    rationale: str
    actor: User | None = None
    refs: Iterable[Mapping[str, Any]] = ()
    occurred_on: date | None = None


def _checked(new: NewEntry, *, where: str = "") -> NewEntry:
    """``new`` with its texts stripped and refs cleaned, or ValidationError naming the field
    (and, in a batch, the entry: ``where``)."""
    try:
        if new.kind not in _KINDS:
            raise ValidationError(
                {
                    "kind": f"{new.kind!r} is not a log entry kind; add it to EntryKind (known: "
                    f"{', '.join(EntryKind.values)})."
                }
            )
        occurred_on = new.occurred_on
        if occurred_on is not None and (
            isinstance(occurred_on, datetime) or not isinstance(occurred_on, date)
        ):
            raise ValidationError({"occurred_on": "occurred_on must be a date (no time of day)."})
        if new.actor is not None and new.actor.pk is None:
            raise ValidationError(
                {"actor": "The actor must be a saved user, or None for the system."}
            )
        return NewEntry(
            kind=new.kind,
            rationale=_clean_text(new.rationale, field="rationale", required=True),
            actor=new.actor,
            refs=_clean_refs(new.refs),
            occurred_on=occurred_on,
        )
    except ValidationError as error:
        if not where:
            raise
        raise ValidationError(
            {f: [f"{where}: {m}" for m in ms] for f, ms in error.message_dict.items()}
        ) from error


_KINDS = frozenset(EntryKind.values)
# The columns a batch is copied into, in the order ``_copy`` writes them.
_COPY_COLUMNS = (
    "protocol_id, protocol_code, seq, recorded_at, actor_id, actor_name, kind, rationale, refs, "
    "occurred_on, outcome_visible, prev_hash, hash, pending_id"
)


@dataclass(frozen=True)
class _Row:
    """A checked entry as chaining reads it: what it hashes besides the chain's own fields."""

    kind: str
    rationale: str
    actor_id: int | None
    actor_name: str
    refs: list[dict[str, Any]]
    occurred_on: date | None
    # The staged row it comes from (PendingEntry.id), recorded on the chained entry.
    pending_id: int | None = None


def _row(new: NewEntry) -> _Row:
    return _Row(
        kind=new.kind,
        rationale=new.rationale,
        actor_id=new.actor.pk if new.actor is not None else None,
        actor_name=new.actor.get_username() if new.actor is not None else SYSTEM_ACTOR,
        refs=[dict(ref) for ref in new.refs],
        occurred_on=new.occurred_on,
    )


def _validated(protocol: Protocol, entries: list[NewEntry]) -> list[NewEntry]:
    """Every entry checked (``_checked``), before any lock is taken."""
    if not connection.in_atomic_block:
        raise RuntimeError("deviation_append must run inside the caller's transaction")
    if protocol is None or protocol.pk is None:
        raise ValidationError({"protocol": "The log entry needs a saved protocol."})
    many = len(entries) > 1
    return [_checked(new, where=f"entry {n}" if many else "") for n, new in enumerate(entries, 1)]


def _link(rows: Sequence[_Row], head: _Head) -> list[dict[str, Any]]:
    """``rows`` chained after ``head`` and hashed in Python: their exported dicts, as
    ``selectors.entry_dict`` gives them."""
    moment = format_timestamp(head.now)
    prev_hash = head.hash
    dicts = []
    for seq, row in enumerate(rows, start=head.seq + 1):
        entry = {
            "actor": row.actor_name,
            "kind": row.kind,
            "occurred_on": row.occurred_on.isoformat() if row.occurred_on else None,
            "outcome_visible": head.visible,
            "prev_hash": prev_hash,
            "protocol": head.code,
            "rationale": row.rationale,
            "recorded_at": moment,
            "refs": row.refs,
            "seq": seq,
        }
        # The verifier's own encoder (chain.py; the tests prove it gives apps.core.canonical's
        # bytes), several times faster on entries than the general one.
        entry["hash"] = prev_hash = entry_hash(entry)
        dicts.append(entry)
    return dicts


def _model(protocol_id: int, row: _Row, e: dict[str, Any], at: datetime) -> LogEntry:
    """The unsaved row of a chained entry (``e``: its exported dict, as ``_link`` gives it)."""
    return LogEntry(
        protocol_id=protocol_id,
        protocol_code=e["protocol"],
        seq=e["seq"],
        recorded_at=at,
        actor_id=row.actor_id,
        actor_name=e["actor"],
        kind=e["kind"],
        rationale=e["rationale"],
        refs=e["refs"],
        occurred_on=row.occurred_on,
        outcome_visible=e["outcome_visible"],
        prev_hash=e["prev_hash"],
        hash=e["hash"],
        pending_id=row.pending_id,
    )


def _copy(protocol_id: int, rows: list[_Row], dicts: list[dict[str, Any]], at: datetime) -> None:
    """Insert a chained batch: PostgreSQL's COPY (one statement), else a bulk INSERT."""
    if connection.vendor != "postgresql":
        LogEntry.objects.bulk_create(
            [_model(protocol_id, row, e, at) for row, e in zip(rows, dicts, strict=True)],
            batch_size=500,
        )
        return
    columns = f"COPY deviations_logentry ({_COPY_COLUMNS}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(columns) as copy:
        for row, e in zip(rows, dicts, strict=True):
            copy.write_row(
                (
                    protocol_id, e["protocol"], e["seq"], at, row.actor_id, e["actor"], e["kind"],
                    e["rationale"], canonical_json(e["refs"]).decode(), row.occurred_on,
                    e["outcome_visible"], e["prev_hash"], e["hash"], row.pending_id,
                )
            )  # fmt: skip


# Stages an entry unless the protocol's log lock is free, in one round trip: when
# pg_try_advisory_xact_lock gets the lock (held to the end of the transaction, as
# _lock_protocol_log's; also when this transaction already holds it) nothing is inserted and the
# caller chains the entry itself.
_STAGE_SQL = """
    INSERT INTO deviations_pendingentry
        (protocol_id, kind, rationale, actor_id, actor_name, refs, occurred_on, created_at)
    SELECT %s, %s, %s, %s, %s, %s::jsonb, %s, clock_timestamp()
    WHERE NOT pg_try_advisory_xact_lock(%s, %s)
    RETURNING id
"""


def _staged(protocol_id: int, row: _Row) -> bool:
    """On PostgreSQL: True when another transaction holds the protocol's log lock and ``row`` was
    staged (a PendingEntry, in the caller's transaction, chained after its commit); False when
    the lock was free and is now held by this transaction."""
    with connection.cursor() as cursor:
        cursor.execute(
            _STAGE_SQL,
            [
                protocol_id, row.kind, row.rationale, row.actor_id, row.actor_name,
                canonical_json(row.refs).decode(), row.occurred_on,
                _ADVISORY_NAMESPACE, protocol_id % 2**31,
            ],
        )  # fmt: skip
        staged = cursor.fetchone() is not None
    # Either way this transaction must look for staged entries once it ends: its own, or those
    # staged by others while it held the lock.
    _sequence_after_commit(protocol_id)
    return staged


class _Sequencer:
    """The on-commit callback that chains a protocol's staged entries (``_combine``)."""

    def __init__(self, protocol_id: int) -> None:
        self.protocol_id = protocol_id

    def __call__(self) -> None:
        _combine(self.protocol_id)


def _sequence_after_commit(protocol_id: int) -> None:
    # Once per protocol and transaction, however many entries it stages or appends. A savepoint
    # rolled back drops its staged rows and the callbacks registered inside it together, so a
    # callback found here will run once the rows it is for have committed. robust: the caller's
    # change has committed by then; a failure is logged and the beat task chains the rows.
    for registered in connection.run_on_commit:
        callback = registered[1]  # (savepoint ids, callback, robust)
        if isinstance(callback, _Sequencer) and callback.protocol_id == protocol_id:
            return
    transaction.on_commit(_Sequencer(protocol_id), robust=True)


# Run outside a transaction, in one round trip: NULL when nothing of the protocol is staged;
# else whether its log lock was free. CASE evaluates the lock function only when rows are
# staged, so a peek that finds none never holds the lock, not even for the moment it runs.
_PEEK_SQL = """
    SELECT CASE WHEN (SELECT kind FROM deviations_pendingentry WHERE protocol_id = %s
                      ORDER BY id DESC LIMIT 1) IS NOT NULL
                THEN pg_try_advisory_xact_lock(%s, %s) END
"""


def _combine(protocol_id: int) -> None:
    """After the commit of a transaction that staged entries of the protocol or held its log
    lock: chain every committed staged entry, unless another transaction holds the lock.

    Flat combining (Hendler et al. 2010): whoever holds the lock chains every staged entry it
    sees, and nobody waits for it. A writer whose entry was staged tries the lock once its
    transaction has committed; if another transaction holds it, that one will look again when
    it ends, as every holder does here: after releasing the lock it looks for staged rows (a
    new statement, so it sees every row committed while it held the lock, including those
    whose writers found the lock taken and left), and tries again while there are some. So a
    committed staged entry is chained by its own writer or by the holder that made it leave,
    unless that holder rolls back: then by the next append to the protocol or the beat task
    (``pending_sequence_all``).
    """
    key = [_ADVISORY_NAMESPACE, protocol_id % 2**31]
    while True:
        with connection.cursor() as cursor:
            cursor.execute(_PEEK_SQL, [protocol_id, *key])
            free = cursor.fetchone()[0]
        if free is None:
            return  # nothing staged
        if not free:
            return  # its holder looks again when it ends
        # Rows are staged and the lock was free; the peek held it for a moment, and whoever it
        # turned away had committed its row first, so the batch below (or the holder that
        # beats us to the lock, when it looks again) chains it.
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", key)
            if not cursor.fetchone()[0]:
                return  # its holder looks again when it ends
            _head, chained = _chain_pending(protocol_id)
        if not chained:
            # What is staged and committed cannot be chained exactly (``_chain_pending`` leaves
            # it queued): looking again would find the same rows.
            return


def _chain_pending(protocol_id: int) -> tuple[_Head, int]:
    """Under the protocol's log lock: chain every staged entry of the protocol this transaction
    sees (those of committed transactions, and its own), in queue order, before anything else
    is appended. (The head after them, how many were chained.)

    Only rows whose content the chain reproduces exactly leave the queue: a row's ``refs`` must
    be a list of objects that comes back the same from canonical JSON (``_staged`` writes them
    so). Any other row (written past the application: refs that are not a list, or numbers JSON
    cannot carry exactly) stays staged, is never chained altered, and is logged; the database
    would refuse its delete anyway (deviations 0009), and leaving it keeps every other append
    of the protocol going."""
    head = _chain_head(protocol_id)
    if not head.pending:
        return head, 0
    with connection.cursor() as cursor:
        # Only a holder of the lock deletes staged rows, so each row read here is chained once;
        # a row whose transaction has not committed is not seen, and is sequenced after it does.
        # Each is chained under its id (LogEntry.pending_id): the database refuses, at commit, a
        # delete of a staged row whose content this transaction did not chain (deviations 0009).
        cursor.execute(
            "SELECT id, kind, rationale, actor_id, actor_name, refs, occurred_on "
            "FROM deviations_pendingentry WHERE protocol_id = %s ORDER BY id",
            [protocol_id],
        )
        staged = cursor.fetchall()
        candidates: dict[int, list[dict[str, Any]]] = {}
        for pending_id, _kind, _rationale, _actor_id, _actor_name, raw, _on in staged:
            refs = _reproducible_refs(raw)
            if refs is not None:
                candidates[pending_id] = refs
        if candidates:
            # The rows whose stored refs equal their canonical form, compared by the database.
            ids = list(candidates)
            cursor.execute(
                "DELETE FROM deviations_pendingentry p USING unnest(%s::bigint[], %s::jsonb[]) "
                "AS c(id, refs) WHERE p.id = c.id AND p.refs = c.refs RETURNING p.id",
                [ids, [canonical_json(candidates[i]).decode() for i in ids]],
            )
            taken = {row[0] for row in cursor.fetchall()}
        else:
            taken = set()
    left = [row[0] for row in staged if row[0] not in taken]
    if left:
        logger.error(
            "staged log entries of protocol %s left queued: their refs cannot be chained "
            "exactly (pending %s)",
            protocol_id,
            ", ".join(map(str, left)),
        )
    rows = [
        _Row(kind, rationale, actor_id, actor_name, candidates[pending_id], occurred_on, pending_id)
        for pending_id, kind, rationale, actor_id, actor_name, _raw, occurred_on in staged
        if pending_id in taken
    ]
    if not rows:
        return head._replace(pending=False), 0
    dicts = _link(rows, head)
    _copy(protocol_id, rows, dicts, head.now)
    last = dicts[-1]
    return head._replace(seq=last["seq"], hash=last["hash"], pending=False), len(rows)


def _reproducible_refs(raw: Any) -> list[dict[str, Any]] | None:
    """A staged row's refs as the chain reads them (Django's psycopg setup hands jsonb over as
    text), or None when they are not a list of objects (the only shape ``_staged`` writes)."""
    refs = json.loads(raw) if isinstance(raw, str | bytes) else raw
    if not isinstance(refs, list) or not all(isinstance(ref, dict) for ref in refs):
        return None
    return refs


def pending_sequence(*, protocol_id: int) -> int:
    """Chain the protocol's staged entries (``PendingEntry``) in a transaction of its own, waiting
    for the protocol's log lock, and return how many it chained; 0 on SQLite, which never
    stages.

    What the beat task runs (``pending_sequence_all``) for rows left behind: by a writer killed
    between its commit and chaining them, or while a transaction that held the lock rolled
    back. Every committed staged entry is chained in queue order as one batch (one read of the
    head, one COPY, the rows deleted in the same transaction); entry times are the database's
    clock now and ``outcome_visible`` the seal's state now, as for any append.
    """
    if connection.vendor != "postgresql":
        return 0
    with transaction.atomic():
        _lock_protocol_log(protocol_id)
        _head, chained = _chain_pending(protocol_id)
    return chained


def pending_sequence_all() -> dict[int, int]:
    """``pending_sequence`` for every protocol with staged entries (the beat task): {protocol id:
    entries chained}, leaving out protocols whose rows another sequencer chained first."""
    staged = PendingEntry.objects.order_by("protocol_id").values_list("protocol_id", flat=True)
    protocol_ids = list(staged.distinct())
    chained = {}
    for pk in protocol_ids:
        try:
            chained[pk] = pending_sequence(protocol_id=pk)
        except DatabaseError:
            # One protocol's failure (its transaction rolled back whole) does not keep the
            # others' staged entries out of their logs; the next run tries it again.
            logger.exception("chaining the staged log entries of protocol %s failed", pk)
    return {pk: n for pk, n in chained.items() if n}


def _append_one(*, protocol: Protocol, new: NewEntry, wait: bool) -> LogEntry | None:
    (checked,) = _validated(protocol, [new])
    row = _row(checked)
    # Everything above runs before the lock: it is held to the end of the caller's
    # transaction, and every other append to this protocol waits for it or is staged.
    if connection.vendor == "postgresql" and not wait:
        if _staged(protocol.pk, row):
            return None
    else:
        _lock_protocol_log(protocol.pk)
    head, _staged_before = _chain_pending(protocol.pk)
    (e,) = _link([row], head)
    entry = _model(protocol.pk, row, e, head.now)
    entry.protocol, entry.actor = protocol, checked.actor
    # No full_clean: every field it would check is checked by _checked (the kind, the texts,
    # the refs, the date) or comes from the chain, the protocol and the actor's own row.
    entry.save(force_insert=True)
    return entry


@overload
def deviation_append(
    *,
    protocol: Protocol,
    kind: str,
    rationale: str,
    actor: User | None = ...,
    refs: Iterable[Mapping[str, Any]] = ...,
    occurred_on: date | None = ...,
    chained: Literal[True],
) -> LogEntry: ...


@overload
def deviation_append(
    *,
    protocol: Protocol,
    kind: str,
    rationale: str,
    actor: User | None = ...,
    refs: Iterable[Mapping[str, Any]] = ...,
    occurred_on: date | None = ...,
    chained: bool = ...,
) -> LogEntry | None: ...


def deviation_append(
    *,
    protocol: Protocol,
    kind: str,
    rationale: str,
    actor: User | None = None,
    refs: Iterable[Mapping[str, Any]] = (),
    occurred_on: date | None = None,
    chained: bool = False,
) -> LogEntry | None:
    """Append one entry to the protocol's log: return it chained, or None when it was staged.

    Runs inside the caller's transaction, so the entry and the change it records commit or roll
    back together; raises RuntimeError when called outside one. The time is the database's
    clock when the entry is chained; ``outcome_visible`` is not a parameter: it is true exactly
    when outcomes of one of the protocol's versions have been unsealed by then.

    Appends to one protocol are serialised by an advisory lock held to the end of the
    transaction, so the chain never forks or gaps. When the lock is free (no other transaction
    is appending to this protocol: the usual case, and always on SQLite) this call takes it and
    chains the entry, after any staged ones, and returns the ``LogEntry``. When another
    transaction holds it, the entry is staged instead (a ``PendingEntry`` row in the caller's
    transaction, so no lock is held across the caller's commit) and None is returned. Once the
    caller's transaction commits (``transaction.on_commit``), the entry is chained in a batch
    with every other staged entry of the protocol, by this writer if the lock is free by then,
    else by the transaction holding it as soon as that one ends (``_combine``; the beat task
    after a crash); if the caller rolls back, the entry never existed. ``chained=True`` always
    waits for the lock and returns the chained entry: for a caller that reads its own entry
    back in the same transaction (docs/deviation-log.md, "Appends under contention").

    ``kind`` is an ``EntryKind`` value (``outcome_unsealed`` is written only by
    ``outcome_unseal``); ``rationale`` must not be blank; ``refs`` are ``{"type", "id",
    "label"}`` references to the objects concerned (flat values only: text, integers, booleans,
    null); ``occurred_on`` is the day a recorded deviation happened, when that is not today.
    Raises ValidationError naming the field for bad input, before anything is written.
    """
    if kind == EntryKind.OUTCOME_UNSEALED:
        raise ValidationError({"kind": "outcome_unsealed entries are written by outcome_unseal."})
    new = NewEntry(kind=kind, rationale=rationale, actor=actor, refs=refs, occurred_on=occurred_on)
    return _append_one(protocol=protocol, new=new, wait=chained)


def deviation_append_many(
    *, protocol: Protocol, entries: Iterable[NewEntry]
) -> list[dict[str, Any]]:
    """Append ``entries`` to the protocol's log, in order, and return them as exported and
    hashed (``selectors.entry_dict``'s dicts): what a bulk caller (an import, a batch of
    exclusions) uses instead of one ``deviation_append`` per entry.

    The same rules as ``deviation_append`` with ``chained=True`` (in the caller's transaction;
    serialised per protocol, never across protocols, waiting for the lock; staged entries
    chained first; the database's time, one for the whole batch; the outcome seal's
    ``outcome_visible``), and all or nothing: every entry is validated before the lock is
    taken, and a bad one raises ValidationError naming it ("entry 3: …") and the field, with
    nothing written. Under the lock the batch costs one read of the chain's head and one
    statement (PostgreSQL's COPY; a bulk INSERT elsewhere), the hashes computed in Python
    between them (figures: docs/performance.md, "Appends at scale").
    """
    entries = list(entries)
    if any(new.kind == EntryKind.OUTCOME_UNSEALED for new in entries):
        raise ValidationError({"kind": "outcome_unsealed entries are written by outcome_unseal."})
    checked = _validated(protocol, entries)
    if not checked:
        return []
    _lock_protocol_log(protocol.pk)
    head, _staged_before = _chain_pending(protocol.pk)
    rows = [_row(new) for new in checked]
    dicts = _link(rows, head)
    _copy(protocol.pk, rows, dicts, head.now)
    return dicts


def version_log_append(
    version: ProtocolVersion,
    *,
    kind: str,
    rationale: str,
    actor: User | None = None,
    refs: Iterable[Mapping[str, Any]] = (),
    chained: bool = False,
) -> LogEntry | None:
    """``deviation_append`` for an act on one version: the entry goes to the version's protocol's
    log and names the version (``version_ref``) before ``refs``. Same errors, transaction and
    return (None when staged, unless ``chained``)."""
    return deviation_append(
        protocol=version.protocol,
        kind=kind,
        rationale=rationale,
        actor=actor,
        refs=[version_ref(version), *refs],
        chained=chained,
    )


@transaction.atomic
def deviation_record(
    *,
    protocol: Protocol,
    user: User,
    rationale: str,
    occurred_on: date,
    kind: str = EntryKind.DEVIATION,
    refs: Iterable[Mapping[str, Any]] = (),
) -> LogEntry:
    """Record a deviation by hand, as ``user``.

    The CRUCIBLE deviation-log fields: ``occurred_on`` (the date it happened, not in the future),
    ``rationale`` (required) and whether outcome data had been inspected, which comes from the
    outcome seal, never from the caller. ``kind`` is one of ``MANUAL_KINDS``. Who may record
    (the protocol's PI or an editor, ``selectors.DEVIATION_WRITER_ROLES``) is the caller's to
    check. Raises ValidationError naming the field for bad input.
    """
    if kind not in MANUAL_KINDS:
        raise ValidationError(
            {
                "kind": f"{kind!r} cannot be recorded by hand; use one of "
                f"{', '.join(str(k) for k in MANUAL_KINDS)}."
            }
        )
    if not isinstance(occurred_on, date) or isinstance(occurred_on, datetime):
        raise ValidationError({"occurred_on": "Give the date the deviation happened."})
    # "Today" anywhere on Earth (UTC+14 is the earliest): a deviation recorded in the Pacific
    # morning is not "in the future" for being dated by its local day.
    if occurred_on > (timezone.now().astimezone(UTC) + timedelta(hours=14)).date():
        raise ValidationError(
            {
                "occurred_on": f"{occurred_on.isoformat()} is in the future; a deviation is "
                "recorded once it has happened."
            }
        )
    # chained: the user is shown the entry they recorded, with its place in the chain.
    return deviation_append(
        protocol=protocol,
        kind=kind,
        rationale=rationale,
        actor=user,
        refs=refs,
        occurred_on=occurred_on,
        chained=True,
    )


@transaction.atomic
def outcome_unseal(*, version: ProtocolVersion, user: User, confirmation: str) -> OutcomeUnsealing:
    """Break the outcome seal of a frozen version: its analysis results become visible.

    Only with ``confirmation`` equal to the protocol's code, typed exactly; that ``user`` is the
    protocol's PI is the caller's to check (the page and the API ask for the PI's role). Writes an
    ``outcome_unsealed`` log entry in the same transaction; from then on every entry of the
    protocol carries ``outcome_visible = true``. Raises ValidationError (naming the field) when
    the version is not frozen, is already unsealed, or the confirmation does not match.
    """
    protocol = version.protocol
    # Before any check: a second PI unsealing at the same moment waits here, then is told the
    # seal is already broken (instead of hitting the one-to-one constraint).
    _lock_protocol_log(protocol.pk)
    # Entries staged by transactions that committed before the seal broke take their places
    # now, recorded as written before outcomes were seen (the unsealing row does not exist yet).
    _chain_pending(protocol.pk)
    if version.state != "frozen":
        raise ValidationError(
            {
                "version": f"{protocol.code} v{version.label} is a {version.state} version; only a "
                "frozen version's outcomes can be unsealed."
            }
        )
    existing = OutcomeUnsealing.objects.filter(version=version).select_related("unsealed_by")
    if (unsealing := existing.first()) is not None:
        raise ValidationError(
            {
                "version": f"The outcomes of {protocol.code} v{version.label} were already "
                f"unsealed by {unsealing.unsealed_by.get_username()} at "
                f"{format_timestamp(unsealing.unsealed_at)}."
            }
        )
    if confirmation != protocol.code:
        raise ValidationError(
            {
                "confirmation": f"Type the protocol code {protocol.code} exactly to confirm "
                "that you unseal the outcomes."
            }
        )
    unsealing = OutcomeUnsealing(version=version, unsealed_by=user, confirmation=confirmation)
    full_clean_save(unsealing)
    unsealed = NewEntry(
        kind=EntryKind.OUTCOME_UNSEALED,
        rationale=f"Outcomes of {protocol.code} v{version.label} unsealed by the PI; from this "
        "entry on, outcome data have been seen.",
        actor=user,
        refs=[version_ref(version)],
    )
    _append_one(protocol=protocol, new=unsealed, wait=True)
    return unsealing
