"""Celery tasks of blind rating."""

from celery import shared_task


@shared_task(name="raters.assignments_expire")
def assignments_expire_task() -> int:
    """Return expired reservations to the pool (scheduled every minute by Celery beat).

    Needs no claim: the service skips rows another transaction holds, so overlapping runs
    never free a reservation twice.
    """
    from apps.raters.services import assignments_expire

    return assignments_expire()


@shared_task(name="raters.oracle_run")
def oracle_run_task(run_id: int) -> str:
    """Perform one oracle run (claimed first: a second delivery of the message does nothing)."""
    from apps.raters.services.machine import oracle_run_perform

    return oracle_run_perform(run_id=run_id)
