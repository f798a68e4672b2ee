"""Scheduled work of the responses app."""

from celery import shared_task


@shared_task(name="responses.import_previews_sweep")
def import_previews_sweep() -> int:
    """Delete abandoned import previews (Celery beat, hourly); returns how many."""
    from apps.responses.staging import import_previews_sweep as sweep

    return sweep()
