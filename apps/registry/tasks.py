"""The registry's beat task: embargoes end by themselves on their day."""

from celery import shared_task


@shared_task(name="registry.embargoes_end")
def embargoes_end() -> list[int]:
    """End every embargo whose day has come (idempotent; see ``embargoes_end_due``)."""
    from apps.registry.services import embargoes_end_due

    return embargoes_end_due()
