"""Who may read a blob.

A blob is a frozen document; which one it is decides who may read it. This app knows the frozen
protocol versions: their documents are read by the protocol's PI, editors and auditors (never by
a reviewer, who must not reach protocol text, nor by anyone outside the protocol). Another app
that stores blobs (an analysis result, say) registers its own rule with ``register_blob_reader``;
a blob is readable when any rule says so, and unreadable blobs answer 404 exactly as unknown ones.
A blob some app declares public (``register_public_blob``) is readable by anyone, signed in or
not.
"""

from collections.abc import Callable

from apps.accounts.models import Membership, User
from apps.accounts.selectors import SIGHTED_ROLES
from apps.protocols.models import Blob, Deposit, ProtocolVersion, VersionState

BlobReader = Callable[[User, str], bool]
PublicBlob = Callable[[str], bool]

_readers: dict[str, BlobReader] = {}
_public: dict[str, PublicBlob] = {}


def register_blob_reader(name: str, reader: BlobReader) -> None:
    """Add (or, on a repeated ``ready()``, replace) a rule ``reader(user, sha256) -> bool``."""
    _readers[name] = reader


def register_public_blob(name: str, rule: PublicBlob) -> None:
    """Add (or replace) a rule ``rule(sha256) -> bool`` saying a blob is public: readable by
    anyone, signed in or not (seed 003's rubric once its PI publishes it)."""
    _public[name] = rule


def _frozen_version_reader(user: User, sha256: str) -> bool:
    protocol_ids = ProtocolVersion.objects.filter(sha256=sha256, state=VersionState.FROZEN).values(
        "protocol_id"
    )
    return Membership.objects.filter(
        user=user, protocol_id__in=protocol_ids, role__in=SIGHTED_ROLES
    ).exists()


register_blob_reader("protocols.version", _frozen_version_reader)


def _deposited_version_reader(user: User, sha256: str) -> bool:
    # A deposited version's text (issue #17): readable as its protocol's frozen documents are.
    protocol_ids = Deposit.objects.filter(blob_id=sha256).values("version__protocol_id")
    return Membership.objects.filter(
        user=user, protocol_id__in=protocol_ids, role__in=SIGHTED_ROLES
    ).exists()


register_blob_reader("protocols.deposit", _deposited_version_reader)


def blob_readable_by(*, user: User, sha256: str) -> bool:
    """Whether ``user`` may read the blob ``sha256``: a public blob by anyone, any other under a
    registered reader rule."""
    if any(rule(sha256) for rule in _public.values()):
        return True
    if not user.is_authenticated:
        return False
    return any(reader(user, sha256) for reader in _readers.values())


class AmbiguousBlobPrefix(LookupError):
    """The prefix names more than one blob the user may read."""


# The hash the rules are asked about when no blob matches, so that an unknown hash costs the
# same queries as one the user may not read.
_NO_BLOB = "0" * 64


def blob_for(*, user: User, digest: str) -> Blob | None:
    """The blob ``digest`` names (its SHA-256, or a prefix of 16 or more lowercase hex digits)
    if ``user`` may read it, else None; raises ``AmbiguousBlobPrefix`` when the prefix names
    more than one blob the user may read.

    Existence is not observable, by the answer or by its time (issue #33): access is decided
    from the hashes alone, before any content is loaded, and an unknown hash runs the same
    rules (on a hash no blob has) as a known one the user may not read. Only a readable blob's
    content is loaded.
    """
    rows = Blob.objects.order_by("sha256").values_list("sha256", flat=True)
    candidates = list(
        rows.filter(sha256=digest)
        if len(digest) == 64
        else rows.filter(sha256__startswith=digest)[:2]
    )
    readable = [sha256 for sha256 in candidates if blob_readable_by(user=user, sha256=sha256)]
    if not candidates:
        blob_readable_by(user=user, sha256=_NO_BLOB)
    if len(readable) > 1:
        raise AmbiguousBlobPrefix(digest)
    if not readable:
        return None
    return Blob.objects.get(sha256=readable[0])
