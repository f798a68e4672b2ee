"""Reads of the deviation log and the outcome seal."""

from apps.deviations.models import OutcomeUnsealing


def outcomes_visible(version) -> bool:
    """Whether the outcome seal of ``version`` has been broken by a PI."""
    return OutcomeUnsealing.objects.filter(version=version).exists()


def protocol_outcomes_visible(*, protocol_id: int) -> bool:
    """Whether any version of the protocol has had its outcomes unsealed.

    Once outcomes have been seen, every later log entry of the protocol says so.
    """
    return OutcomeUnsealing.objects.filter(version__protocol_id=protocol_id).exists()
