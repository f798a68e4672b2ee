"""Writes of the deviation log and the outcome seal. ``deviation_append`` is the only way in."""

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone

from apps.accounts.models import User
from apps.core.canonical import canonical_json
from apps.core.rows import full_clean_save
from apps.deviations.chain import GENESIS_HASH, entry_hash
from apps.deviations.models import MANUAL_KINDS, EntryKind, LogEntry, OutcomeUnsealing
from apps.deviations.selectors import protocol_outcomes_visible
from apps.protocols.models import Protocol, ProtocolVersion
from apps.protocols.refs import version_ref

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


# One round trip for everything an append reads, taken after the lock: under READ COMMITTED a
# statement that starts after pg_advisory_xact_lock returned sees every entry committed by the
# appender it waited for. clock_timestamp(), not now(): the lock may have been waited for, and
# entry times must rise along the chain.
_HEAD_SQL = """
    SELECT last.seq, last.hash, last.protocol_code, clock_timestamp(),
           EXISTS (SELECT 1 FROM deviations_outcomeunsealing u
                   JOIN protocols_protocolversion v ON v.id = u.version_id
                   WHERE v.protocol_id = %(protocol)s)
    FROM (SELECT 1) AS one
    LEFT JOIN LATERAL (SELECT seq, hash, protocol_code FROM deviations_logentry
                       WHERE protocol_id = %(protocol)s ORDER BY seq DESC LIMIT 1) AS last ON true
"""


def _chain_head(protocol_id: int) -> tuple[int, str, str | None, datetime, bool]:
    """(last seq or 0, its hash or the genesis hash, the protocol code the chain was written
    under or None for a new chain, the time now, whether outcomes were seen)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_HEAD_SQL, {"protocol": protocol_id})
            last_seq, last_hash, code, now, visible = cursor.fetchone()
    else:
        last = (
            LogEntry.objects.filter(protocol_id=protocol_id)
            .order_by("-seq")
            .values_list("seq", "hash", "protocol_code")
            .first()
        )
        last_seq, last_hash, code = last or (None, None, None)
        now, visible = timezone.now(), protocol_outcomes_visible(protocol_id=protocol_id)
    if last_seq is None:
        return 0, GENESIS_HASH, None, now, visible
    return last_seq, last_hash, code, now, visible


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
    "occurred_on, outcome_visible, prev_hash, hash"
)


def _chained(
    *, protocol: Protocol, entries: list[NewEntry]
) -> tuple[list[NewEntry], list[dict[str, Any]], datetime]:
    """Validate every entry, then, under the protocol's log lock, chain and hash them in Python:
    (the entries cleaned, their exported dicts as ``selectors.entry_dict`` gives them, the time
    they were recorded)."""
    if not connection.in_atomic_block:
        raise RuntimeError("deviation_append must run inside the caller's transaction")
    if protocol is None or protocol.pk is None:
        raise ValidationError({"protocol": "The log entry needs a saved protocol."})
    many = len(entries) > 1
    checked = [
        _checked(new, where=f"entry {n}" if many else "") for n, new in enumerate(entries, 1)
    ]
    if not checked:
        return [], [], timezone.now()
    # Everything above runs before the lock: it is held to the end of the caller's
    # transaction, and every other append to this protocol waits for it.
    _lock_protocol_log(protocol.pk)
    last_seq, prev_hash, chain_code, recorded_at, outcome_visible = _chain_head(protocol.pk)
    # One chain, one code: the code its first entry was written under (docs/deviation-log.md).
    protocol_code = chain_code or protocol.code
    moment = format_timestamp(recorded_at)
    dicts = []
    for seq, new in enumerate(checked, start=last_seq + 1):
        entry = {
            "actor": new.actor.get_username() if new.actor is not None else SYSTEM_ACTOR,
            "kind": new.kind,
            "occurred_on": new.occurred_on.isoformat() if new.occurred_on else None,
            "outcome_visible": outcome_visible,
            "prev_hash": prev_hash,
            "protocol": protocol_code,
            "rationale": new.rationale,
            "recorded_at": moment,
            "refs": new.refs,
            "seq": seq,
        }
        # The verifier's own encoder (chain.py; the tests prove it gives apps.core.canonical's
        # bytes), several times faster on entries than the general one.
        entry["hash"] = prev_hash = entry_hash(entry)
        dicts.append(entry)
    return checked, dicts, recorded_at


def _model(protocol: Protocol, new: NewEntry, entry: dict[str, Any], at: datetime) -> LogEntry:
    return LogEntry(
        protocol=protocol,
        protocol_code=entry["protocol"],
        seq=entry["seq"],
        recorded_at=at,
        actor=new.actor,
        actor_name=entry["actor"],
        kind=entry["kind"],
        rationale=entry["rationale"],
        refs=entry["refs"],
        occurred_on=new.occurred_on,
        outcome_visible=entry["outcome_visible"],
        prev_hash=entry["prev_hash"],
        hash=entry["hash"],
    )


def _append_one(*, protocol: Protocol, new: NewEntry) -> LogEntry:
    checked, dicts, at = _chained(protocol=protocol, entries=[new])
    entry = _model(protocol, checked[0], dicts[0], at)
    # No full_clean: every field it would check is checked by _checked (the kind, the texts,
    # the refs, the date) or comes from the chain, the protocol and the actor's own row.
    entry.save(force_insert=True)
    return entry


def _copy(
    protocol: Protocol, checked: list[NewEntry], dicts: list[dict[str, Any]], at: datetime
) -> None:
    """Insert a chained batch: PostgreSQL's COPY (one statement), else a bulk INSERT."""
    if connection.vendor != "postgresql":
        LogEntry.objects.bulk_create(
            [_model(protocol, new, entry, at) for new, entry in zip(checked, dicts, strict=True)],
            batch_size=500,
        )
        return
    columns = f"COPY deviations_logentry ({_COPY_COLUMNS}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(columns) as copy:
        for new, e in zip(checked, dicts, strict=True):
            copy.write_row(
                (
                    protocol.pk, e["protocol"], e["seq"], at,
                    new.actor.pk if new.actor is not None else None, e["actor"], e["kind"],
                    e["rationale"], canonical_json(e["refs"]).decode(), new.occurred_on,
                    e["outcome_visible"], e["prev_hash"], e["hash"],
                )
            )  # fmt: skip


def deviation_append(
    *,
    protocol: Protocol,
    kind: str,
    rationale: str,
    actor: User | None = None,
    refs: Iterable[Mapping[str, Any]] = (),
    occurred_on: date | None = None,
) -> LogEntry:
    """Append one entry to the protocol's log and return it.

    Runs inside the caller's transaction, so the entry and the change it records commit or roll
    back together; raises RuntimeError when called outside one. Appends to one protocol are
    serialised (an advisory lock held to the end of the transaction), so the chain never forks
    or gaps. The time is the database's clock; ``outcome_visible`` is not a parameter: it is true
    exactly when outcomes of one of the protocol's versions have been unsealed.

    ``kind`` is an ``EntryKind`` value (``outcome_unsealed`` is written only by
    ``outcome_unseal``); ``rationale`` must not be blank; ``refs`` are ``{"type", "id",
    "label"}`` references to the objects concerned (flat values only: text, integers, booleans,
    null); ``occurred_on`` is the day a recorded deviation happened, when that is not today.
    Raises ValidationError naming the field for bad input.
    """
    if kind == EntryKind.OUTCOME_UNSEALED:
        raise ValidationError({"kind": "outcome_unsealed entries are written by outcome_unseal."})
    new = NewEntry(kind=kind, rationale=rationale, actor=actor, refs=refs, occurred_on=occurred_on)
    return _append_one(protocol=protocol, new=new)


def deviation_append_many(
    *, protocol: Protocol, entries: Iterable[NewEntry]
) -> list[dict[str, Any]]:
    """Append ``entries`` to the protocol's log, in order, and return them as exported and
    hashed (``selectors.entry_dict``'s dicts): what a bulk caller (an import, a batch of
    exclusions) uses instead of one ``deviation_append`` per entry.

    The same rules as ``deviation_append`` (in the caller's transaction; serialised per
    protocol, never across protocols; the database's time, one for the whole batch; the
    outcome seal's ``outcome_visible``), and all or nothing: every entry is validated before
    the lock is taken, and a bad one raises ValidationError naming it ("entry 3: …") and the
    field, with nothing written. Under the lock the batch costs one read of the chain's head
    and one statement (PostgreSQL's COPY; a bulk INSERT elsewhere), the hashes computed in
    Python between them (figures: docs/performance.md, "Appends at scale").
    """
    entries = list(entries)
    if any(new.kind == EntryKind.OUTCOME_UNSEALED for new in entries):
        raise ValidationError({"kind": "outcome_unsealed entries are written by outcome_unseal."})
    checked, dicts, at = _chained(protocol=protocol, entries=entries)
    if dicts:
        _copy(protocol, checked, dicts, at)
    return dicts


def version_log_append(
    version: ProtocolVersion,
    *,
    kind: str,
    rationale: str,
    actor: User | None = None,
    refs: Iterable[Mapping[str, Any]] = (),
) -> LogEntry:
    """``deviation_append`` for an act on one version: the entry goes to the version's protocol's
    log and names the version (``version_ref``) before ``refs``. Same errors and transaction."""
    return deviation_append(
        protocol=version.protocol,
        kind=kind,
        rationale=rationale,
        actor=actor,
        refs=[version_ref(version), *refs],
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
    return deviation_append(
        protocol=protocol,
        kind=kind,
        rationale=rationale,
        actor=user,
        refs=refs,
        occurred_on=occurred_on,
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
    _append_one(protocol=protocol, new=unsealed)
    return unsealing
