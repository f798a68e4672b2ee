"""Reads of protocols, versions, their lineage and edit history, and blobs."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Prefetch, QuerySet

from apps.accounts.models import User
from apps.accounts.selectors import SIGHTED_ROLES
from apps.protocols.models import AnalysisParameter, Blob, Protocol, ProtocolVersion

BLOB_PREFIX_MIN = 16


def protocols_for(*, user: User) -> QuerySet[Protocol]:
    """The protocols on which ``user`` holds a sighted role (PI, editor or auditor)."""
    return (
        Protocol.objects.filter(memberships__user=user, memberships__role__in=SIGHTED_ROLES)
        .distinct()
        .order_by("code")
    )


def protocol_versions(*, protocol: Protocol) -> list[ProtocolVersion]:
    """Every version of ``protocol`` in lineage order (1.0 → 1.1 → …), with what their
    status needs (successor, withdrawal) and who froze them already loaded."""
    versions = list(
        ProtocolVersion.objects.filter(protocol=protocol)
        .select_related("protocol", "supersedes", "successor", "withdrawal", "frozen_by")
        .order_by("created_at", "pk")
    )
    return _lineage_order(versions)


def _lineage_order(versions: list[ProtocolVersion]) -> list[ProtocolVersion]:
    # Amendments form chains through `supersedes` (a version has at most one successor); a
    # protocol normally has one chain, started by its draft 1.0.
    by_predecessor = {v.supersedes_id: v for v in versions if v.supersedes_id}
    ordered = []
    for root in (v for v in versions if v.supersedes_id is None):
        current: ProtocolVersion | None = root
        while current is not None:
            ordered.append(current)
            current = by_predecessor.get(current.pk)
    seen = {v.pk for v in ordered}
    return ordered + [v for v in versions if v.pk not in seen]


def version_with_content(*, version: ProtocolVersion) -> ProtocolVersion:
    """``version`` again, with its parameters (in plan order) prefetched for a page or API."""
    return (
        ProtocolVersion.objects.select_related(
            "protocol", "supersedes", "successor", "withdrawal", "frozen_by"
        )
        .prefetch_related(
            Prefetch("parameters", queryset=AnalysisParameter.objects.order_by("position", "name"))
        )
        .get(pk=version.pk)
    )


@dataclass(frozen=True)
class HistoryRow:
    when: datetime
    who: str
    what: str
    changes: list[str]


def version_history(*, version: ProtocolVersion, limit: int = 200) -> list[HistoryRow]:
    """The recorded edits of ``version`` and its parameters, newest first (django-simple-history).

    Each row names the fields that changed against the record before it.
    """
    rows: list[HistoryRow] = []
    records = list(
        version.history.select_related("history_user").order_by("history_date", "history_id")
    )
    for previous, record in zip([None, *records], records, strict=False):
        if previous is None:
            changes = ["created"]
        else:
            delta = record.diff_against(previous, excluded_fields=["updated_at"])
            changes = [change.field for change in delta.changes]
        rows.append(
            HistoryRow(
                record.history_date,
                record.history_user.get_username() if record.history_user else "system",
                f"v{version.label}",
                changes,
            )
        )
    parameter_records = list(
        AnalysisParameter.history.filter(version_id=version.pk)
        .select_related("history_user")
        .order_by("history_date", "history_id")
    )
    # django-simple-history builds its record classes at run time: the stubs cannot name them.
    last: dict[int, Any] = {}
    for record in parameter_records:
        previous = last.get(record.id)
        last[record.id] = record
        if previous is None:
            continue  # the parameter's creation is part of the version's
        if previous.value == record.value:
            continue
        rows.append(
            HistoryRow(
                record.history_date,
                record.history_user.get_username() if record.history_user else "system",
                record.name,
                [f"{previous.value or '⟨ ⟩'} → {record.value or '⟨ ⟩'}"],
            )
        )
    rows.sort(key=lambda row: row.when, reverse=True)
    return rows[:limit]


def blob_digests_matching(*, digest: str, limit: int = 50) -> list[str]:
    """The SHA-256s of the blobs whose hash is ``digest`` or starts with it (at most ``limit``),
    without loading their content: whether one may be read is decided before it is loaded."""
    if len(digest) == 64:
        return list(Blob.objects.filter(sha256=digest).values_list("sha256", flat=True))
    matching = Blob.objects.filter(sha256__startswith=digest).order_by("sha256")
    return list(matching.values_list("sha256", flat=True)[:limit])


def blob_matching(*, digest: str) -> list[Blob]:
    """The blobs whose SHA-256 is ``digest`` or starts with it (at most two: enough to tell
    a unique prefix from an ambiguous one). ``digest`` must be 16–64 lowercase hex characters."""
    if len(digest) == 64:
        return list(Blob.objects.filter(sha256=digest))
    return list(Blob.objects.filter(sha256__startswith=digest).order_by("sha256")[:2])
