"""Celery tasks of the analysis: ids in, claim first, the work in the services."""

from celery import shared_task
from celery.signals import worker_ready


@shared_task(name="analysis.run_execute", acks_late=True, reject_on_worker_lost=True)
def analysis_run_execute(run_id: int) -> str:
    """Run analysis run ``run_id`` if this worker can claim it (see ``analysis_run_perform``)."""
    from apps.analysis.services import analysis_run_perform

    return analysis_run_perform(run_id=run_id)


@shared_task(name="analysis.computability_check", acks_late=True, reject_on_worker_lost=True)
def computability_check(version_id: int, key: str) -> str:
    """The freeze gate's computability check of version ``version_id`` in a worker, for a
    large design (``apps.analysis.computability.computability_verdict``)."""
    from apps.analysis.computability import computability_perform

    return computability_perform(version_id=version_id, key=key)


@shared_task(name="analysis.runs_reap")
def analysis_runs_reap() -> dict:
    """Requeue or fail runs and design diagnoses whose worker died; resend queue messages that
    were lost."""
    from apps.analysis.diagnosis.services import design_diagnoses_reap
    from apps.analysis.services import analysis_runs_reap as reap

    return {**reap(), "diagnoses": design_diagnoses_reap()}


@worker_ready.connect
def reap_when_a_worker_starts(sender: object = None, **kwargs: object) -> None:
    """A worker that starts (after a crash, a deploy, a killed container) asks for the reaper
    at once, so a killed analysis run is recovered even where beat does not run."""
    analysis_runs_reap.delay()


@shared_task(name="analysis.design_diagnosis_execute", acks_late=True)
def design_diagnosis_execute(diagnosis_id: int) -> str:
    """Run design diagnosis ``diagnosis_id`` if this worker can claim it
    (``apps.analysis.diagnosis.services.design_diagnosis_perform``)."""
    from apps.analysis.diagnosis.services import design_diagnosis_perform

    return design_diagnosis_perform(diagnosis_id=diagnosis_id)
