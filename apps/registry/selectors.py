"""Reads of the public registry: what anyone may see, in a bounded number of queries.

Every public read filters on publication in the same query that finds the object, so an
unpublished version, run or log is never loaded first and then refused: it is simply not found,
exactly as an unknown one (BRIEF invariant 6; ``apps.registry.access``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Any

from django.db.models import Exists, Max, OuterRef, Q, QuerySet
from django.utils import timezone

from apps.analysis.diagnosis.selectors import diagnosis_blobs_of, latest_diagnosis
from apps.analysis.models import AnalysisRun, RunState
from apps.deviations.models import EntryKind, LogCheckpoint, LogEntry, OutcomeUnsealing
from apps.deviations.selectors import entry_dicts
from apps.protocols.models import Protocol, ProtocolVersion, VersionState
from apps.registry.models import Publication, RunPublication, ViewLink

# A version is public once its publication says so (never again private: see models.py).
PUBLIC = Q(publication__public_since__isnull=False)
INDEX_PAGE_SIZE = 25


def public_versions() -> QuerySet[ProtocolVersion]:
    """Every public version (withdrawn ones included, as tombstones), with what a list shows."""
    return ProtocolVersion.objects.filter(PUBLIC, state=VersionState.FROZEN).select_related(
        "protocol", "publication", "withdrawal"
    )


def public_version(*, code: str, label: str) -> ProtocolVersion | None:
    """Version ``label`` of protocol ``code`` if it is public, else None (one query), with its
    protocol, publication, tombstone, seal, predecessor and successor (and theirs)."""
    return (
        public_versions()
        .filter(protocol__code=code, label=label)
        .select_related(
            "supersedes",
            "supersedes__publication",
            "successor",
            "successor__publication",
            "unsealing",
        )
        .first()
    )


def public_protocol(*, code: str) -> Protocol | None:
    """Protocol ``code`` if at least one of its versions is public, else None (one query)."""
    return (
        Protocol.objects.filter(code=code)
        .filter(Exists(public_versions().filter(protocol=OuterRef("pk"))))
        .first()
    )


def protocol_public_versions(*, protocol: Protocol) -> list[ProtocolVersion]:
    """The protocol's public versions in freeze order, each with its successor (for "superseded
    by") and seal: one query whatever their number."""
    return list(
        public_versions()
        .filter(protocol=protocol)
        .select_related("successor", "successor__publication", "unsealing")
        .order_by("frozen_at", "pk")
    )


def is_superseded_publicly(version: ProtocolVersion) -> ProtocolVersion | None:
    """The public version that supersedes ``version``, or None (no query: the successor and its
    publication come with ``public_version``/``protocol_public_versions``)."""
    successor = getattr(version, "successor", None)
    if successor is None or successor.state != VersionState.FROZEN:
        return None
    publication = getattr(successor, "publication", None)
    return successor if publication is not None and publication.is_public else None


@dataclass(frozen=True)
class IndexQuery:
    """The index's search: text in the code or title, the plan template, and a range of the
    days the protocol's versions were first made public (inclusive)."""

    text: str = ""
    template: str = ""
    published_from: date | None = None
    published_to: date | None = None


def registry_index(*, query: IndexQuery) -> QuerySet[Protocol]:
    """The public protocols matching ``query``, most recently published first, each annotated
    with ``last_public_since`` and ``public_count``."""
    matching = public_versions().filter(protocol=OuterRef("pk"))
    if query.published_from is not None:
        start = timezone.make_aware(datetime.combine(query.published_from, time.min))
        matching = matching.filter(publication__public_since__gte=start)
    if query.published_to is not None:
        end = timezone.make_aware(datetime.combine(query.published_to, time.max))
        matching = matching.filter(publication__public_since__lte=end)
    protocols = Protocol.objects.filter(Exists(matching))
    if query.text:
        protocols = protocols.filter(Q(code__icontains=query.text) | Q(title__icontains=query.text))
    if query.template:
        protocols = protocols.filter(template=query.template)
    public = Q(versions__publication__public_since__isnull=False)
    return protocols.annotate(
        last_public_since=Max("versions__publication__public_since", filter=public)
    ).order_by("-last_public_since", "code")


def protocol_authors(*, protocol: Protocol) -> str:
    """How the PIs chose to be named: the latest public version's publication's ``authors``."""
    latest = (
        Publication.objects.filter(version__protocol=protocol, public_since__isnull=False)
        .order_by("-public_since")
        .values_list("authors", flat=True)
        .first()
    )
    return latest or ""


def recent_publications(*, limit: int = 50) -> list[Publication]:
    """The latest public versions, newest first, for the Atom feed."""
    return list(
        Publication.objects.filter(public_since__isnull=False)
        .select_related("version", "version__protocol", "version__withdrawal")
        .order_by("-public_since", "-pk")[:limit]
    )


def amendments(*, protocol: Protocol) -> list[LogEntry]:
    """The protocol's amendment entries of public versions, in log order: rationale, time and
    whether outcome data had been seen (set by the system at the time). An amendment that
    froze a version not (yet) public is left out, like the version itself (``entry_is_public``,
    the rule the public log follows)."""
    public = _public_version_refs(protocol)
    entries = LogEntry.objects.filter(protocol=protocol, kind=EntryKind.AMENDMENT).order_by("seq")
    return [
        entry
        for entry in entries
        if entry_is_public(kind=entry.kind, refs=entry.refs, public=public)
    ]


def blob_is_public(sha256: str) -> bool:
    """Whether a blob is public: the document of a public version that is not withdrawn (a
    tombstone no longer shows its content), the design diagnosis such a document names
    (issue #35 §5), or the inputs or result of a published run."""
    return (
        public_versions().filter(sha256=sha256, withdrawal__isnull=True).exists()
        or _named_diagnosis_is_public(sha256)
        or RunPublication.objects.filter(
            Q(run__result_id=sha256) | Q(run__inputs_id=sha256)
        ).exists()
    )


def _named_diagnosis_is_public(sha256: str) -> bool:
    live = public_versions().filter(withdrawal__isnull=True)
    for diagnosis in diagnosis_blobs_of(live).filter(result_id=sha256).select_related("version"):
        named = latest_diagnosis(diagnosis.version)
        if named is not None and named.pk == diagnosis.pk:
            return True
    return False


def view_link(*, token: str) -> ViewLink | None:
    """The live (not revoked) view-only link ``token`` with its version, else None (one query)."""
    if not token or len(token) > 64:
        return None
    return (
        ViewLink.objects.filter(token=token, revoked_at__isnull=True, version__state="frozen")
        .select_related("version", "version__protocol", "version__withdrawal", "version__unsealing")
        .first()
    )


def view_links_of(*, protocol: Protocol) -> list[ViewLink]:
    """Every view-only link to the protocol's versions, newest first (the PI's page)."""
    return list(
        ViewLink.objects.filter(version__protocol=protocol).select_related("version", "created_by")
    )


def published_runs(*, version: ProtocolVersion) -> list[AnalysisRun]:
    """The version's published runs, newest first."""
    return list(
        AnalysisRun.objects.filter(version=version, publication__isnull=False)
        .select_related("publication")
        .order_by("-number")
    )


def public_run(*, code: str, label: str, number: int) -> AnalysisRun | None:
    """Run ``number`` of a public, not withdrawn version if it was published, else None."""
    return (
        AnalysisRun.objects.filter(
            version__protocol__code=code,
            version__label=label,
            version__publication__public_since__isnull=False,
            version__withdrawal__isnull=True,
            number=number,
            publication__isnull=False,
            state=RunState.SUCCEEDED,
        )
        .select_related("version", "version__protocol", "publication", "inputs", "result")
        .first()
    )


def run_log_entry_seq(*, run: AnalysisRun) -> int | None:
    """The seq of the log entry that recorded the run's result (its ``analysis`` entry)."""
    entries = LogEntry.objects.filter(
        protocol_id=run.version.protocol_id, kind=EntryKind.ANALYSIS
    ).order_by("seq")
    for seq, refs in entries.values_list("seq", "refs"):
        if any(ref.get("type") == "analysis_run" and ref.get("id") == run.pk for ref in refs):
            return seq
    return None


def log_entries_through(*, protocol: Protocol, seq: int | None, limit: int = 500) -> list[LogEntry]:
    """The protocol's log entries up to ``seq`` (all when None), the last ``limit`` of them."""
    entries = LogEntry.objects.filter(protocol=protocol)
    if seq is not None:
        entries = entries.filter(seq__lte=seq)
    return list(reversed(entries.order_by("-seq")[:limit]))


# The kinds of entry a reader of a published version may read whole: what was frozen, amended,
# withdrawn, published, unsealed, excluded, rerun, reordered, lost or analysed. Everything else
# (imports, score corrections, roles, view-only links, alarms, control validations, rubric
# publications) is internal to the study and served withheld.
PUBLIC_ENTRY_KINDS = frozenset(
    {
        EntryKind.FREEZE,
        EntryKind.AMENDMENT,
        EntryKind.WITHDRAWAL,
        EntryKind.REGISTRY,
        EntryKind.OUTCOME_UNSEALED,
        EntryKind.EXCLUSION,
        EntryKind.DEVIATION,
        EntryKind.RERUN,
        EntryKind.REORDER,
        EntryKind.PLATFORM_LOSS,
        EntryKind.ANALYSIS,
    }
)


@dataclass(frozen=True)
class PublicRefs:
    """What of a protocol's versions the public may read in its log: the public versions' ids
    and hashes, and for each public version (by id) the id of the version it supersedes."""

    ids: frozenset[int]
    hashes: frozenset[str]
    predecessor_of: dict[int, int]


def _public_version_refs(protocol: Protocol) -> PublicRefs:
    public = public_versions().filter(protocol=protocol).values_list("pk", "sha256", "supersedes")
    return PublicRefs(
        ids=frozenset(pk for pk, _, _ in public),
        hashes=frozenset(sha for _, sha, _ in public if sha),
        predecessor_of={pk: before for pk, _, before in public if before is not None},
    )


def entry_is_public(*, kind: str, refs: Any, public: PublicRefs) -> bool:
    """Whether a log entry may be read whole by the public: its kind is one a reader of the
    registration needs (``PUBLIC_ENTRY_KINDS``), it names at least one public version, and every
    other version it names is public too, except that the amendment entry of a public version
    may name the version it supersedes. That one's label and hash are already public, in the
    public version's own canonical document (``supersedes``), and the entry is the freeze the
    offline proof of the public version needs (``verify_registration.py``), whether or not the
    version it supersedes was ever frozen or published. Anything else about an unpublished
    version (its own freeze, a rationale, an entry naming it alone) stays unobservable (BRIEF
    invariant 6)."""
    if kind not in PUBLIC_ENTRY_KINDS or not isinstance(refs, list):
        return False
    versions = [r for r in refs if isinstance(r, dict) and r.get("type") == "version"]

    def is_public(ref: dict[str, Any]) -> bool:
        return ref.get("id") in public.ids or (ref.get("sha256") or "") in public.hashes

    named_public = [r for r in versions if is_public(r)]
    disclosed: set[int] = set()
    if kind == EntryKind.AMENDMENT:
        for ref in named_public:
            ref_id = ref.get("id")
            if isinstance(ref_id, int) and ref_id in public.predecessor_of:
                disclosed.add(public.predecessor_of[ref_id])
    return bool(named_public) and all(is_public(r) or r.get("id") in disclosed for r in versions)


def withheld(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry as the public log serves what it withholds: its place in the chain and the tree
    (protocol, seq, prev_hash, hash) and no content (``chain.verify_chain(allow_withheld=True)``
    checks it so)."""
    return {
        "protocol": entry["protocol"],
        "seq": entry["seq"],
        "prev_hash": entry["prev_hash"],
        "hash": entry["hash"],
        "withheld": True,
    }


def public_log_lines(*, protocol: Protocol) -> Iterator[dict[str, Any]]:
    """The protocol's whole chain as exported (``apps.deviations.selectors.entry_dicts``), each
    entry that is not public (``entry_is_public``) withheld (``withheld``): the offline verifier
    still proves every public entry's place in the signed tree."""
    public = _public_version_refs(protocol)
    for entry in entry_dicts(protocol=protocol):
        if entry_is_public(kind=entry["kind"], refs=entry["refs"], public=public):
            yield entry
        else:
            yield withheld(entry)


def public_log_entries_through(
    *, protocol: Protocol, seq: int | None, limit: int = 500
) -> list[tuple[LogEntry, bool]]:
    """``log_entries_through`` with, for each entry, whether the public may read it whole
    (``entry_is_public``); a page shows the others as withheld."""
    public = _public_version_refs(protocol)
    return [
        (entry, entry_is_public(kind=entry.kind, refs=entry.refs, public=public))
        for entry in log_entries_through(protocol=protocol, seq=seq, limit=limit)
    ]


def public_checkpoints(*, protocol: Protocol) -> list[dict[str, Any]]:
    """Every signed checkpoint of the protocol's log, oldest first, as served."""
    return list(
        LogCheckpoint.objects.filter(protocol=protocol)
        .order_by("seq", "signed_at")
        .values_list("document", flat=True)
    )


def first_unsealing(*, protocol: Protocol) -> OutcomeUnsealing | None:
    """The protocol's first outcome unsealing, or None while no outcome has been seen."""
    return (
        OutcomeUnsealing.objects.filter(version__protocol=protocol).order_by("unsealed_at").first()
    )
