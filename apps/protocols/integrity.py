"""Frozen rows checked against their hash (issue #18, deliverable 2).

A frozen version's rows are guarded by triggers, but whoever can switch a trigger off (a
superuser, the tables' owner) can change them, and the stored SHA-256 would still be read as the
version's identity. So before every analysis run, and whenever a frozen version is shown or
exported, its canonical document is rebuilt from the rows (``documents.version_document_bytes``,
the very function the freeze hashed) and its SHA-256 compared with the stored one, with the
hash of the stored blob, and with the hash the version's freeze entry wrote into the deviation
log, whose chain must verify (issue #33: a consistent rewrite of rows, blob and ``sha256``
agrees with itself, never with the log). On a mismatch the analysis refuses to run, the
version's pages show an integrity alarm, and one ``integrity_alarm`` entry is written to the
deviation log (once per recomputed hash, not on every page view).

Rebuilding costs what a freeze costs, so pages may reuse a verdict: on PostgreSQL it is cached
under a fingerprint of the rows (count and newest ``xmin`` of every table the frozen-version guard
protects, for this version): any UPDATE, INSERT or DELETE, by anyone, changes some ``xmin`` or a
count, so a cached verdict is never older than the rows. On SQLite (no triggers, no ``xmin``) a
page reuses a verdict for at most a minute. An analysis run never uses the cache; its fresh
verdict replaces the cached one.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import connection, transaction

from apps.core.canonical import sha256_hex
from apps.protocols.documents import (
    CURRENT_REVISION,
    document_revision,
    version_document_bytes,
)
from apps.protocols.models import Blob, ProtocolVersion, VersionState

logger = logging.getLogger(__name__)

CACHE_SECONDS = 24 * 60 * 60
# SQLite (the embedded development default, which has no triggers to bypass and no xmin): pages
# reuse a verdict for this long; every uncached check (each analysis run) refreshes it.
SQLITE_CACHE_SECONDS = 60


@dataclass(frozen=True)
class IntegrityVerdict:
    """What rebuilding a frozen version's document found.

    ``ok`` when the rows rebuild the stored document exactly; otherwise ``recomputed`` is the
    SHA-256 the rows give now and ``reason`` says what differs. ``checked`` is False for a draft
    (a draft has no hash to keep).
    """

    version_id: int
    stored: str
    recomputed: str
    ok: bool
    reason: str = ""
    checked: bool = True

    def as_dict(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "checked": self.checked,
            "stored_sha256": self.stored or None,
            "recomputed_sha256": self.recomputed or None,
            "reason": self.reason,
        }


class IntegrityAlarm(ValidationError):
    """The frozen version's rows no longer give its hash: nothing may be computed from them."""


_FROZEN_TABLES_SQL = """
    SELECT c.relname, split_part(encode(t.tgargs, 'escape'), '\\000', 1)
    FROM pg_trigger t
    JOIN pg_class c ON c.oid = t.tgrelid
    JOIN pg_proc p ON p.oid = t.tgfoid
    WHERE p.proname = 'preregistry_guard_frozen' AND NOT t.tgisinternal
    ORDER BY c.relname
"""
_frozen_tables: list[tuple[str, str]] | None = None


def _fingerprint(version: ProtocolVersion) -> str | None:
    """A digest of (count, newest xmin) of every frozen-guarded table's rows of ``version``, the
    version row and its protocol row; None where there is no such thing (SQLite)."""
    global _frozen_tables
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        if _frozen_tables is None:
            cursor.execute(_FROZEN_TABLES_SQL)
            _frozen_tables = [(table, column) for table, column in cursor.fetchall()]
        quote = connection.ops.quote_name
        parts = [
            f"SELECT {i}, count(*), max(xmin::text::bigint) FROM {quote(table)} "
            f"WHERE {quote(column)} = %(version)s"
            for i, (table, column) in enumerate(_frozen_tables)
        ]
        parts.append(
            "SELECT -1, count(*), max(xmin::text::bigint) FROM protocols_protocolversion "
            "WHERE id = %(version)s OR id = %(predecessor)s"
        )
        parts.append(
            "SELECT -2, count(*), max(xmin::text::bigint) FROM protocols_protocol "
            "WHERE id = %(protocol)s"
        )
        # The log that vouches for the hash, its stored checkpoints, and the blob itself.
        parts.append(
            "SELECT -3, count(*), max(xmin::text::bigint) FROM deviations_logentry "
            "WHERE protocol_id = %(protocol)s"
        )
        parts.append(
            "SELECT -4, count(*), max(xmin::text::bigint) FROM deviations_logcheckpoint "
            "WHERE protocol_id = %(protocol)s"
        )
        parts.append(
            "SELECT -5, count(*), max(xmin::text::bigint) FROM protocols_blob "
            "WHERE sha256 = %(sha256)s"
        )
        cursor.execute(
            " UNION ALL ".join(parts) + " ORDER BY 1",
            {
                "version": version.pk,
                "predecessor": version.supersedes_id or version.pk,
                "protocol": version.protocol_id,
                "sha256": version.sha256,
            },
        )
        rows = cursor.fetchall()
    return hashlib.sha256(repr(rows).encode()).hexdigest()


def _verify(version: ProtocolVersion) -> IntegrityVerdict:
    stored = version.sha256
    blob = Blob.objects.filter(sha256=stored).only("content").first()
    content = bytes(blob.content) if blob is not None else b""
    # Rebuilt in the revision the stored document names, so a version frozen as revision 1
    # keeps its hash; a missing or unreadable blob is rebuilt in the current one (and fails
    # below all the same).
    revision = document_revision(content) or CURRENT_REVISION
    try:
        _content, recomputed = version_document_bytes(version=version, revision=revision)
    except (LookupError, TypeError, ValueError, AttributeError) as error:
        # Rows that no longer build a document at all (a schedule entry whose evaluand left the
        # roster, say) are the strongest mismatch there is: an alarm, never a server error.
        return IntegrityVerdict(
            version.pk,
            stored,
            "unbuildable",
            ok=False,
            reason=f"the rows of {version.protocol.code} v{version.label} no longer build a "
            f"document ({type(error).__name__}: {error}): a frozen row was changed or removed",
        )
    if recomputed != stored:
        return IntegrityVerdict(
            version.pk,
            stored,
            recomputed,
            ok=False,
            reason=f"the rows of {version.protocol.code} v{version.label} give the document "
            f"hash {recomputed}, not the frozen {stored}: a frozen row was changed",
        )
    if blob is None:
        return IntegrityVerdict(
            version.pk, stored, recomputed, ok=False, reason=f"the blob {stored} is missing"
        )
    if sha256_hex(content) != stored:
        return IntegrityVerdict(
            version.pk,
            stored,
            recomputed,
            ok=False,
            reason=f"the stored blob {stored} no longer hashes to its name",
        )
    problem = _log_problem(version)
    if problem:
        return IntegrityVerdict(version.pk, stored, recomputed, ok=False, reason=problem)
    return IntegrityVerdict(version.pk, stored, recomputed, ok=True)


# The log's verifier lives in a later app (deviations sits after protocols: it imports them), so
# it registers the one read the check needs from its ``ready()``: the protocol's chain verified
# against the checkpoints the server keeps, each itself verified against the configured keys.
_log_verifier: Callable[[Any], Any] | None = None


def register_log_verifier(verifier: Callable[[Any], Any]) -> None:
    """Register ``verifier(protocol) -> ChainReport`` (``apps.deviations`` does, once)."""
    global _log_verifier
    _log_verifier = verifier


def _log_report(protocol):
    """The protocol's chain, verified against the checkpoints the server keeps (one place, so
    that a stronger anchor, a verified checkpoint or a witness's, replaces it here alone)."""
    if _log_verifier is None:
        raise ImproperlyConfigured("apps.deviations is not installed: no log verifier")
    return _log_verifier(protocol)


def _freeze_entry(version: ProtocolVersion):
    """The ``freeze`` or ``amendment`` entry of the deviation log that names ``version`` first
    (its version reference carries the hash the freeze computed), or None."""
    from apps.deviations.models import EntryKind, LogEntry

    entries = LogEntry.objects.filter(
        protocol_id=version.protocol_id, kind__in=(EntryKind.FREEZE, EntryKind.AMENDMENT)
    ).order_by("seq")
    return next(
        (
            entry
            for entry in entries.only("seq", "refs")
            if entry.refs
            and isinstance(entry.refs[0], dict)
            and entry.refs[0].get("type") == "version"
            and entry.refs[0].get("id") == version.pk
        ),
        None,
    )


def _log_problem(version: ProtocolVersion) -> str:
    """Why the deviation log does not vouch for ``version.sha256`` ('' when it does).

    The rows, the blob and the version's ``sha256`` agreeing proves nothing by itself: whoever
    rewrites a frozen row can store the rewritten document's blob and point ``sha256`` at it
    (issue #33). The hash the freeze wrote into the log (its ``freeze`` or ``amendment`` entry's
    version reference) is the one that counts, and the log's chain must hold for it to count.
    """
    freeze = _freeze_entry(version)
    name = f"{version.protocol.code} v{version.label}"
    if freeze is None:
        return f"the deviation log has no freeze entry for {name}, so nothing vouches for its hash"
    logged = freeze.refs[0].get("sha256")
    if logged != version.sha256:
        return (
            f"the freeze entry #{freeze.seq} of {name} in the deviation log names the document "
            f"hash {logged}, but the version now claims {version.sha256}: the version's hash was "
            "repointed"
        )
    report = _log_report(version.protocol)
    if not report.ok:
        return (
            f"the deviation log's chain is broken at entry {report.broken_at} ({report.reason}), "
            f"so its freeze entry #{freeze.seq} of {name} cannot vouch for the hash"
        )
    return ""


def _record_alarm(version: ProtocolVersion, verdict: IntegrityVerdict) -> None:
    # Imported here: the deviations app comes after protocols in the dependency order.
    from apps.deviations.models import EntryKind, LogEntry
    from apps.deviations.services import version_log_append

    alarm_ref = {"type": "integrity", "id": verdict.recomputed, "label": "recomputed hash"}
    with transaction.atomic():
        # Once per (version, recomputed hash): the advisory lock deviation_append takes makes
        # two page views at once write one entry, as the check below runs after it.
        existing = LogEntry.objects.filter(
            protocol_id=version.protocol_id, kind=EntryKind.INTEGRITY_ALARM
        ).values_list("refs", flat=True)
        for refs in existing:
            if alarm_ref in refs and any(
                ref.get("type") == "version" and ref.get("id") == version.pk for ref in refs
            ):
                return
        version_log_append(
            version,
            kind=EntryKind.INTEGRITY_ALARM,
            rationale=f"Integrity alarm: {verdict.reason}. Analyses of this version are refused "
            "until the rows are restored.",
            actor=None,
            refs=[alarm_ref],
            chained=True,  # the check above reads the chained entries only
        )


def version_integrity_verify(
    *, version: ProtocolVersion, use_cache: bool = False
) -> IntegrityVerdict:
    """Rebuild a frozen version's canonical document from its rows and compare its SHA-256.

    ``use_cache`` (pages, exports) may reuse the verdict for rows whose fingerprint has not
    changed (PostgreSQL only); an analysis run passes False. On a mismatch an
    ``integrity_alarm`` entry is written to the protocol's deviation log, once per recomputed
    hash. A draft is not checked (``checked`` False, ``ok`` True). Never raises for a mismatch:
    see ``version_integrity_require``.
    """
    if version.state == VersionState.DRAFT or not version.sha256:
        # A draft has no hash to keep, unless the log says it was frozen: then its row was
        # turned back into a draft (issue #33), which switched this check off.
        freeze = _freeze_entry(version) if version.state == VersionState.DRAFT else None
        if freeze is None:
            return IntegrityVerdict(version.pk, "", "", ok=True, checked=False)
        logged = freeze.refs[0].get("sha256") or ""
        verdict = IntegrityVerdict(
            version.pk,
            logged,
            "draft",
            ok=False,
            reason=f"the freeze entry #{freeze.seq} of the deviation log says "
            f"{version.protocol.code} v{version.label} was frozen with the document hash "
            f"{logged}, but its row says it is a draft",
        )
        logger.error("integrity alarm: %s", verdict.reason)
        _record_alarm(version, verdict)
        return verdict
    fingerprint = _fingerprint(version)
    key = f"preregistry:integrity:{version.pk}:{version.sha256}:{fingerprint or 'ttl'}"
    if use_cache and (cached := cache.get(key)) is not None:
        return cached
    verdict = _verify(version)
    if not verdict.ok:
        logger.error("integrity alarm: %s", verdict.reason)
        _record_alarm(version, verdict)
    cache.set(key, verdict, CACHE_SECONDS if fingerprint else SQLITE_CACHE_SECONDS)
    return verdict


def version_integrity_require(
    *,
    version: ProtocolVersion,
    use_cache: bool = False,
    refused: str = "The analysis is refused.",
) -> IntegrityVerdict:
    """``version_integrity_verify`` (without the cache unless ``use_cache``), raising
    ``IntegrityAlarm`` (a ValidationError on ``version``: "Integrity alarm: <why>. <refused>")
    on a mismatch. Called before every analysis run, and with the cache and "Not exported."
    before a design export."""
    verdict = version_integrity_verify(version=version, use_cache=use_cache)
    if not verdict.ok:
        raise IntegrityAlarm({"version": f"Integrity alarm: {verdict.reason}. {refused}"})
    return verdict
