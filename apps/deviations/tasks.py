"""Celery tasks of the deviation log: staged entries chained, signed checkpoints on a schedule,
and their delivery."""

from typing import Any

from celery import shared_task


@shared_task(name="deviations.pending_sequence")
def pending_sequence_task() -> dict[str, int]:
    """Chain the entries staged under contention whose writer died between its commit and
    sequencing them (beat schedule; a live writer's are chained before its commit returns)."""
    from apps.deviations.services import pending_sequence_all

    return {str(pk): n for pk, n in pending_sequence_all().items()}


@shared_task(name="deviations.checkpoints_write")
def checkpoints_write_task() -> dict[str, list[str]]:
    """Sign the head of every log that grew since its last checkpoint (beat schedule)."""
    from apps.deviations.checkpoints import checkpoints_write_all

    return checkpoints_write_all()


@shared_task(
    name="deviations.checkpoint_deliver",
    autoretry_for=(OSError,),
    retry_backoff=True,
    max_retries=8,
)
def checkpoint_deliver_task(checkpoint_id: int) -> Any:
    """Deliver one checkpoint to the external witness (retried while the witness is away; a
    refusal is not retried: it is logged as an alarm and returned)."""
    from apps.deviations.checkpoints import WitnessRefused, checkpoint_deliver

    try:
        return checkpoint_deliver(checkpoint_id=checkpoint_id)
    except WitnessRefused as refusal:
        return {"refused": str(refusal)}
