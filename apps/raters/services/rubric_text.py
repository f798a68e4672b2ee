"""The rubric's own text at its content address (seed 003): set on a draft, published by a PI.

The text is stored as a blob of its own (``text/markdown``) and served at
``/api/v1/blob/<sha256>`` and at any unique prefix of 16 or more hex digits (seed 003's header
names its 16-hex prefix). Until a PI publishes it, only the protocol's members may read it
(404 for everyone else, as for an unknown hash); once published, anyone may, signed in or not.
Publishing is an append-only act (``RubricPublication``) with a log entry: a content address
served "forever" is never taken back.
"""

from django.core.exceptions import ValidationError
from django.db import transaction

from apps.accounts.models import User
from apps.core.rows import full_clean_save
from apps.deviations.models import EntryKind
from apps.deviations.services import version_log_append
from apps.protocols.models import ProtocolVersion, VersionState
from apps.protocols.services import blob_store, version_require_editable
from apps.raters.models import RubricPublication, RubricText

MAX_RUBRIC_TEXT_BYTES = 1_000_000


@transaction.atomic
def rubric_text_set(*, version: ProtocolVersion, text: str) -> RubricText:
    """Store ``text`` (UTF-8) as the draft version's rubric text and its blob; returns the row.

    Raises ValidationError when the version is frozen, the text is empty or larger than 1 MB.
    """
    version_require_editable(version)
    if not isinstance(text, str) or not text.strip():
        raise ValidationError({"text": ["give the rubric's text"]})
    content = text.encode("utf-8")
    if len(content) > MAX_RUBRIC_TEXT_BYTES:
        raise ValidationError({"text": [f"the text is over {MAX_RUBRIC_TEXT_BYTES} bytes"]})
    blob = blob_store(content=content, media_type="text/markdown")
    row, _ = RubricText.objects.update_or_create(
        version=version, defaults={"sha256": blob.sha256, "media_type": "text/markdown"}
    )
    return row


@transaction.atomic
def rubric_text_publish(*, version: ProtocolVersion, user: User) -> RubricPublication:
    """Make the frozen ``version``'s rubric text public, as ``user``; idempotent.

    That ``user`` is the protocol's PI is the caller's to check (the page and the API ask for the
    PI's role). Raises ValidationError when the version is a draft or has no rubric text. Writes
    one ``publication`` log entry the first time.
    """
    if version.state != VersionState.FROZEN:
        raise ValidationError("Only a frozen version's rubric is published.")
    text = RubricText.objects.filter(version=version).first()
    if text is None:
        raise ValidationError("The version has no rubric text to publish.")
    existing = RubricPublication.objects.filter(sha256=text.sha256).first()
    if existing is not None:
        return existing
    publication = RubricPublication(
        sha256=text.sha256, protocol_id=version.protocol_id, published_by=user
    )
    full_clean_save(publication)
    version_log_append(
        version,
        kind=EntryKind.PUBLICATION,
        rationale=f"Published the rubric text of {version} (sha256 {text.sha256}): from now on "
        f"anyone may read it at /api/v1/blob/{text.sha256[:16]}.",
        actor=user,
    )
    return publication
