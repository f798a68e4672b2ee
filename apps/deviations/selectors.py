"""Reads of the deviation log and the outcome seal."""

import json
import uuid
from collections.abc import Iterator, Mapping
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.db import connection
from django.db.models import Count, Max, QuerySet

from apps.accounts.models import Role, User
from apps.deviations.chain import ChainReport, verify_chain
from apps.deviations.entries import ENTRY_COLUMNS, ENTRY_FIELDS
from apps.deviations.models import LogEntry, OutcomeUnsealing, PendingEntry
from apps.protocols.models import Protocol, ProtocolVersion

# Who reads a protocol's log: its auditors and PI, and its editors, who record deviations in it
# and so should see what they add to. Reviewers never (they get a 404: the protocol is hidden).
LOG_READER_ROLES = frozenset({Role.AUDITOR, Role.PI, Role.EDITOR})
DEVIATION_WRITER_ROLES = frozenset({Role.PI, Role.EDITOR})


def outcomes_visible(version: ProtocolVersion | int) -> bool:
    """Whether the outcome seal of ``version`` (a ProtocolVersion or its id) has been broken.

    Analysis pages call this before showing results; it is false until a PI unseals.
    """
    version_id = getattr(version, "pk", version)
    return OutcomeUnsealing.objects.filter(version_id=version_id).exists()


def protocol_outcomes_visible(*, protocol_id: int) -> bool:
    """Whether any version of the protocol has had its outcomes unsealed.

    Once outcomes have been seen, every later log entry of the protocol says so.
    """
    return OutcomeUnsealing.objects.filter(version__protocol_id=protocol_id).exists()


def pending_count(*, protocol_id: int) -> int:
    """How many entries of the protocol are staged and not yet chained (``PendingEntry``): under
    contention, for the moment between a writer's commit and the batch that chains it; longer
    only when a writer died in between, until the beat task chains them."""
    return PendingEntry.objects.filter(protocol_id=protocol_id).count()


def unsealing_for(version: ProtocolVersion | int) -> OutcomeUnsealing | None:
    """The unsealing of ``version`` with who did it, or None while its outcomes are sealed."""
    version_id = getattr(version, "pk", version)
    return (
        OutcomeUnsealing.objects.select_related("unsealed_by").filter(version_id=version_id).first()
    )


def versions_with_seal(*, protocol_id: int) -> list[ProtocolVersion]:
    """The protocol's versions, oldest first, each with ``.seal`` = its unsealing or None, and
    what their status badge reads (successor, withdrawal) already loaded."""

    versions = list(
        ProtocolVersion.objects.filter(protocol_id=protocol_id)
        .select_related("successor", "withdrawal")
        .order_by("created_at", "pk")
    )
    unsealings = {
        u.version_id: u
        for u in OutcomeUnsealing.objects.select_related("unsealed_by").filter(
            version__protocol_id=protocol_id
        )
    }
    for version in versions:
        # The page reads each version's seal as an attribute (no query per version).
        setattr(version, "seal", unsealings.get(version.pk))  # noqa: B010
    return versions


def log_readable_protocols(*, user: User) -> QuerySet[Protocol]:
    """The protocols whose log ``user`` may read, by code, with ``entry_count`` and ``last_at``."""

    readable = Protocol.objects.filter(
        memberships__user=user, memberships__role__in=LOG_READER_ROLES
    ).values("pk")
    return (
        Protocol.objects.filter(pk__in=readable)
        .annotate(entry_count=Count("log_entries"), last_at=Max("log_entries__recorded_at"))
        .order_by("code")
    )


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def log_entries(
    *, protocol_id: int, filters: Mapping[str, Any] | None = None, newest_first: bool = False
) -> QuerySet[LogEntry]:
    """A protocol's entries, filtered by ``filters`` (each optional: ``kind``, ``actor`` (a
    username), ``date_from`` and ``date_to`` (recorded day, UTC, inclusive; ``date``s), as the
    log page's form and the API's query give them).

    Ordered by ``seq`` (or newest first); the actor's user row comes with each entry.
    """
    filters = filters or {}
    kind, actor = filters.get("kind"), filters.get("actor")
    date_from: date | None = filters.get("date_from")
    date_to: date | None = filters.get("date_to")
    entries = LogEntry.objects.filter(protocol_id=protocol_id).select_related("protocol")
    if kind:
        entries = entries.filter(kind=kind)
    if actor:
        entries = entries.filter(actor_name=actor)
    if date_from:
        entries = entries.filter(recorded_at__gte=_day_start(date_from))
    if date_to:
        entries = entries.filter(recorded_at__lt=_day_start(date_to + timedelta(days=1)))
    return entries.order_by("-seq" if newest_first else "seq")


def log_actors(*, protocol_id: int) -> list[str]:
    """The distinct actor names in a protocol's log, sorted (for the actor filter)."""
    return sorted(
        LogEntry.objects.filter(protocol_id=protocol_id)
        .order_by()
        .values_list("actor_name", flat=True)
        .distinct()
    )


_EXPORT_COLUMNS = ENTRY_COLUMNS


def _format_time(moment: datetime) -> str:
    # As services.format_timestamp, without strftime's cost over millions of rows.
    moment = moment.astimezone(UTC)
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}:"
        f"{moment.minute:02d}:{moment.second:02d}.{moment.microsecond:06d}Z"
    )


def entry_dicts(
    *, protocol: Protocol, chunk_size: int = 10_000, after: int = 0, through: int | None = None
) -> Iterator[dict[str, Any]]:
    """The protocol's whole chain in ``seq`` order, as the dicts that are exported and verified
    (or only the entries after entry ``after`` and through entry ``through``).

    Streams, so memory stays flat for long logs. The keys are ``chain.ENTRY_FIELDS``: ``actor``
    is the hashed username, times are formatted as hashed. On PostgreSQL the rows come through a
    server-side cursor with the times already formatted by the server, which is several times
    faster than the ORM's per-row conversions (see docs/performance.md).
    """
    if connection.vendor == "postgresql":
        yield from _entry_dicts_postgresql(protocol, chunk_size, after, through)
        return
    entries = LogEntry.objects.filter(protocol_id=protocol.pk, seq__gt=after)
    if through is not None:
        entries = entries.filter(seq__lte=through)
    rows = entries.order_by("seq").values_list(*_EXPORT_COLUMNS).iterator(chunk_size=chunk_size)
    for code, seq, recorded_at, occurred_on, *rest in rows:
        day = occurred_on.isoformat() if occurred_on is not None else None
        yield dict(
            zip(ENTRY_FIELDS, (code, seq, _format_time(recorded_at), day, *rest), strict=True)
        )


_REFS_AT = ENTRY_COLUMNS.index("refs")
# The columns of ENTRY_COLUMNS, in their order, the times formatted by PostgreSQL exactly as
# format_timestamp() does.
_ENTRY_SQL = """
    SELECT protocol_code, seq,
           to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
           to_char(occurred_on, 'YYYY-MM-DD'),
           actor_name, kind, rationale, refs::text, outcome_visible, prev_hash, hash
    FROM deviations_logentry WHERE protocol_id = %s AND seq > %s AND seq <= %s ORDER BY seq
"""


def _entry_dicts_postgresql(
    protocol: Protocol, chunk_size: int, after: int, through: int | None
) -> Iterator[dict[str, Any]]:
    decode = json.JSONDecoder().raw_decode  # refs::text is always one JSON array: skip loads()
    connection.ensure_connection()
    # A named (server-side) cursor needs a transaction; WITH HOLD lets it outlive one, so this
    # works in autocommit (a streamed export) and inside a caller's transaction alike.
    with connection.connection.cursor(name=f"log_{uuid.uuid4().hex}", withhold=True) as cursor:
        cursor.itersize = chunk_size
        cursor.execute(_ENTRY_SQL, [protocol.pk, after, 2**31 if through is None else through])
        while rows := cursor.fetchmany(chunk_size):
            for row in rows:
                values = list(row)
                refs = values[_REFS_AT]
                values[_REFS_AT] = [] if refs == "[]" else decode(refs)[0]
                yield dict(zip(ENTRY_FIELDS, values, strict=True))


def entry_dict(entry: LogEntry) -> dict[str, Any]:
    """One entry as exported and verified (see ``entry_dicts``)."""
    values = {column: getattr(entry, column) for column in ENTRY_COLUMNS}
    values["recorded_at"] = _format_time(entry.recorded_at)
    values["occurred_on"] = entry.occurred_on.isoformat() if entry.occurred_on else None
    return dict(zip(ENTRY_FIELDS, values.values(), strict=True))


def chain_verify(
    *,
    protocol: Protocol,
    expect: dict[int, str] | None = None,
    checkpoints: list[dict[str, Any]] | None = None,
) -> ChainReport:
    """Recompute the protocol's whole chain from the database and name the first broken entry.

    The same pure verifier the offline script runs (``apps/deviations/chain.py``). Each entry
    carries the code it was written under; the chain is checked to keep one code throughout,
    whatever the protocol is called today.
    """
    report = verify_chain(
        entry_dicts(protocol=protocol), expect=expect, checkpoints=checkpoints or ()
    )
    if report.protocol is None:  # an empty log
        report.protocol = protocol.code
    return report
