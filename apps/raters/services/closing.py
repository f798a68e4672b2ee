"""Closing a version's scoring (issue #37 §7): when an amendment supersedes a version in
scoring, its open tasks would otherwise keep flowing to reviewers beside the new version's."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from apps.accounts.models import User
from apps.core.words import counted
from apps.deviations.models import EntryKind
from apps.deviations.services import version_log_append
from apps.protocols.models import ProtocolVersion
from apps.raters.models import ScoringClosing, ScoringOpening
from apps.raters.selectors import open_task_count
from apps.raters.services.revocation import reservations_end


@transaction.atomic
def scoring_close(*, version: ProtocolVersion, user: User, reason: str) -> int:
    """Close scoring of ``version`` for good: a ``ScoringClosing`` (its tasks leave every
    reviewer's queue, ``apps.raters.selectors.queue_versions``), its reservations ended
    (``released``) and a log entry saying how many tasks were left unscored and why, all in one
    transaction. Scores already given stay. Returns the number of tasks left unscored; 0, with
    nothing written, when scoring was never opened or is already closed. Raises
    ValidationError when ``reason`` is blank.
    """
    if not reason.strip():
        raise ValidationError({"reason": ["say why scoring is closed"]})
    # The version's row lock serialises two closings (and a closing with scoring_open).
    version = ProtocolVersion.objects.select_for_update().get(pk=version.pk)
    opened = ScoringOpening.objects.filter(version=version).exists()
    if not opened or ScoringClosing.objects.filter(version=version).exists():
        return 0
    left = open_task_count(version)
    closing = ScoringClosing(version=version, closed_by=user, reason=reason.strip())
    closing.full_clean()
    closing.save()
    reservations_end(protocol_id=version.protocol_id, version_id=version.pk)
    version_log_append(
        version,
        kind=EntryKind.DEVIATION,
        rationale=f"Scoring of v{version.label} closed with {counted(left, 'task')} unscored: "
        f"{closing.reason}",
        actor=user,
    )
    return left


def close_work(version: ProtocolVersion, user: User, reason: str) -> None:
    """The raters component's ``close_work`` hook (``version_amend``)."""
    scoring_close(version=version, user=user, reason=reason)
