"""The only way into the deviation log."""

from collections.abc import Iterable
from datetime import UTC
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from apps.core.canonical import canonical_json, sha256_hex
from apps.deviations.models import GENESIS_HASH, LogEntry
from apps.deviations.selectors import protocol_outcomes_visible

# Namespace of the advisory locks that serialise appends per protocol (an arbitrary constant).
_ADVISORY_NAMESPACE = 7_301_001


def entry_hash_payload(
    *,
    protocol_code: str,
    seq: int,
    recorded_at: str,
    actor: str,
    kind: str,
    rationale: str,
    refs: list,
    outcome_visible: bool,
    prev_hash: str,
) -> bytes:
    """The canonical bytes an entry's hash is taken over (see ``docs/deviation-log.md``)."""
    return canonical_json(
        {
            "protocol": protocol_code,
            "seq": seq,
            "recorded_at": recorded_at,
            "actor": actor,
            "kind": kind,
            "rationale": rationale,
            "refs": refs,
            "outcome_visible": outcome_visible,
            "prev_hash": prev_hash,
        }
    )


def format_timestamp(moment) -> str:
    """An entry time as hashed and exported: UTC, microseconds, ``2026-11-30T01:50:00.000123Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _database_now():
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            # clock_timestamp(), not now(): the lock may have been waited for, and entries must
            # be in time order along the chain.
            cursor.execute("SELECT clock_timestamp()")
            return cursor.fetchone()[0]
    return timezone.now()


def deviation_append(
    *,
    protocol,
    kind: str,
    rationale: str,
    actor=None,
    refs: Iterable[dict[str, Any]] = (),
) -> LogEntry:
    """Append one entry to the protocol's log and return it.

    Runs inside the caller's transaction (so the entry and the change it records commit or roll
    back together) and raises RuntimeError when called outside one. ``outcome_visible`` is not a
    parameter: it is true exactly when the protocol's outcomes have been unsealed.
    ``refs`` are ``{"type": ..., "id": ..., "label": ...}`` references to the objects concerned.
    """
    if not connection.in_atomic_block:
        raise RuntimeError("deviation_append must run inside the caller's transaction")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(%s, %s)", [_ADVISORY_NAMESPACE, protocol.pk]
            )
    previous = (
        LogEntry.objects.filter(protocol=protocol).order_by("-seq").values("seq", "hash").first()
    )
    seq = previous["seq"] + 1 if previous else 1
    prev_hash = previous["hash"] if previous else GENESIS_HASH
    recorded_at = _database_now()
    refs = list(refs)
    actor_name = actor.get_username() if actor is not None else "system"
    outcome_visible = protocol_outcomes_visible(protocol_id=protocol.pk)
    entry_hash = sha256_hex(
        entry_hash_payload(
            protocol_code=protocol.code,
            seq=seq,
            recorded_at=format_timestamp(recorded_at),
            actor=actor_name,
            kind=kind,
            rationale=rationale,
            refs=refs,
            outcome_visible=outcome_visible,
            prev_hash=prev_hash,
        )
    )
    with transaction.atomic():
        return LogEntry.objects.create(
            protocol=protocol,
            seq=seq,
            recorded_at=recorded_at,
            actor=actor,
            actor_name=actor_name,
            kind=kind,
            rationale=rationale,
            refs=refs,
            outcome_visible=outcome_visible,
            prev_hash=prev_hash,
            hash=entry_hash,
        )
