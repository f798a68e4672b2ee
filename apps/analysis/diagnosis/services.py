"""Writes of design diagnoses: request, perform (the Celery task's body), cancel.

- ``design_diagnosis_request`` (the PI or an editor, from the draft page or the API) checks the
  declared world against the kind's schema at once (a value out of range is a form error, not a
  failed task), creates a ``queued`` diagnosis and enqueues ``design_diagnosis_execute`` when
  the transaction commits. It never runs the simulation in the request.
- ``design_diagnosis_perform`` claims it (one conditional UPDATE: of two workers handed it,
  one proceeds), runs ``engine.diagnose_version`` with progress written to the row and the
  cancel flag read before each simulation, and stores the result blob and the state in one
  transaction under the version's row lock: a diagnosis that finishes after its draft was
  frozen is failed, never attached (the frozen document names only diagnoses finished while
  the version was a draft). Any error fails it with its reason; nothing half-written.
- ``design_diagnosis_cancel`` sets the flag (a queued diagnosis is cancelled at once).

A diagnosis never blocks the freeze: the freeze neither waits for nor reads a running one.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F, Max, QuerySet
from django.utils import timezone

from apps.accounts.models import User
from apps.analysis.diagnosis.diagnosands import DiagnosisCancelled
from apps.analysis.diagnosis.engine import (
    MAX_SIMS,
    DiagnosisUnavailable,
    diagnose_version,
    size_parameter,
    version_world,
    world_schema_of,
)
from apps.analysis.diagnosis.world import WorldError, world_filled
from apps.analysis.models import DesignDiagnosis, DiagnosisState
from apps.analysis.pipelines.base import PlanInputError
from apps.analysis.services import heartbeat, reap_stale
from apps.core.canonical import canonical_json
from apps.core.rows import full_clean_save
from apps.protocols.models import ProtocolVersion, VersionState
from apps.protocols.services import blob_store

logger = logging.getLogger(__name__)

PROGRESS_EVERY_SECONDS = 1.0


def _enqueue(diagnosis_id: int) -> None:
    from apps.analysis.tasks import design_diagnosis_execute

    design_diagnosis_execute.delay(diagnosis_id)


@transaction.atomic
def design_diagnosis_request(
    *,
    version: ProtocolVersion,
    user: User,
    world: dict[str, Any] | None,
    sims: int,
    seed: int,
    size: str = "",
    size_values: list[int] | None = None,
) -> DesignDiagnosis:
    """Queue a design diagnosis of the draft ``version`` and return it.

    Who may ask is checked by the caller (the protocol's PI and editors). Raises
    ValidationError naming the field: ``version`` (not a draft; the plan has no world),
    ``world`` (a value the kind's schema refuses, naming it), ``sims``, ``seed``, ``size``.
    """
    version = ProtocolVersion.objects.select_for_update().get(pk=version.pk)
    if version.state != VersionState.DRAFT:
        raise ValidationError({"version": "Only a draft's design is diagnosed before its freeze."})
    if not 1 <= sims <= MAX_SIMS:
        raise ValidationError({"sims": f"Give from 1 to {MAX_SIMS} simulations."})
    if not 0 <= seed < 2**63:
        raise ValidationError({"seed": "The seed is an integer from 0 to 2^63 − 1."})
    try:
        _, model = version_world(version)
        world_filled(world_schema_of(version), world)
        if size:
            size_parameter(model, size)
            if not size_values:
                raise WorldError("name the sizes of the curve", where="size_values")
    except DiagnosisUnavailable as error:
        raise ValidationError({"version": str(error)}) from error
    except PlanInputError as error:
        raise ValidationError({"version": f"The design cannot be simulated: {error}"}) from error
    except WorldError as error:
        field = error.where if error.where in ("size", "size_values", "sims") else "world"
        raise ValidationError({field: str(error)}) from error
    number = (
        DesignDiagnosis.objects.filter(version=version).aggregate(top=Max("number"))["top"] or 0
    ) + 1
    diagnosis = DesignDiagnosis(
        version=version,
        number=number,
        requested_by=user,
        world=dict(world or {}),
        seed=seed,
        sims=sims,
        size=size,
        size_values=sorted(set(size_values or [])) if size else [],
        progress_message="Waiting for a worker",
        queued_at=timezone.now(),
    )
    full_clean_save(diagnosis)
    transaction.on_commit(lambda: _enqueue(diagnosis.pk))
    return diagnosis


def design_diagnosis_cancel(*, diagnosis: DesignDiagnosis) -> DesignDiagnosis:
    """Ask a diagnosis to stop: a queued one is cancelled at once, a running one at its next
    simulation; a finished one is left as it is."""
    DesignDiagnosis.objects.filter(pk=diagnosis.pk, state=DiagnosisState.QUEUED).update(
        state=DiagnosisState.CANCELLED,
        cancel_requested=True,
        finished_at=timezone.now(),
        progress_message="Cancelled before it started",
    )
    DesignDiagnosis.objects.filter(pk=diagnosis.pk, state=DiagnosisState.RUNNING).update(
        cancel_requested=True, progress_message="Cancelling…"
    )
    return DesignDiagnosis.objects.get(pk=diagnosis.pk)


def _mine(diagnosis_id: int, attempt: int) -> QuerySet[DesignDiagnosis]:
    """The diagnosis while claim ``attempt`` of it runs (not reaped, reclaimed or finished)."""
    return DesignDiagnosis.objects.filter(
        pk=diagnosis_id, state=DiagnosisState.RUNNING, attempts=attempt
    )


def _end(diagnosis_id: int, attempt: int, state: str, message: str, error: str = "") -> None:
    _mine(diagnosis_id, attempt).update(
        state=state, finished_at=timezone.now(), progress_message=message[:200], error=error
    )


def design_diagnosis_perform(*, diagnosis_id: int) -> str:
    """The Celery task's work (module docstring): returns the state it left the diagnosis in,
    or ``"not claimed"``. While it runs, a heartbeat thread marks the row alive
    (``apps.analysis.services.heartbeat``); ``design_diagnoses_reap`` claims a silent one
    again."""
    claimed = DesignDiagnosis.objects.filter(
        pk=diagnosis_id, state=DiagnosisState.QUEUED, cancel_requested=False
    ).update(
        state=DiagnosisState.RUNNING,
        progress=0,
        progress_message="Started",
        attempts=F("attempts") + 1,
        heartbeat_at=timezone.now(),
    )
    if not claimed:
        return "not claimed"
    diagnosis = DesignDiagnosis.objects.select_related("version").get(pk=diagnosis_id)
    attempt = diagnosis.attempts
    last = [0.0]

    def progress(percent: int, message: str) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_EVERY_SECONDS or percent >= 100:
            last[0] = now
            _mine(diagnosis_id, attempt).update(
                progress=max(0, min(99, percent)),
                progress_message=message[:200],
                heartbeat_at=timezone.now(),
            )

    def cancelled() -> bool:
        return bool(DesignDiagnosis.objects.filter(pk=diagnosis_id, cancel_requested=True).exists())

    try:
        with heartbeat(_mine(diagnosis_id, attempt), name=f"design diagnosis {diagnosis_id}"):
            document = diagnose_version(
                version=diagnosis.version,
                world=diagnosis.world,
                sims=diagnosis.sims,
                seed=diagnosis.seed,
                size=diagnosis.size,
                values=diagnosis.size_values,
                progress=progress,
                cancelled=cancelled,
            )
    except DiagnosisCancelled as error:
        _end(diagnosis_id, attempt, DiagnosisState.CANCELLED, f"Cancelled: {error}")
        return DiagnosisState.CANCELLED
    except (DiagnosisUnavailable, WorldError, PlanInputError) as error:
        _end(diagnosis_id, attempt, DiagnosisState.FAILED, "Failed", str(error))
        return DiagnosisState.FAILED
    except Exception as error:  # the pipeline's own failure: the PI sees why, the log the rest
        logger.exception("design diagnosis %s failed", diagnosis_id)
        _end(
            diagnosis_id, attempt, DiagnosisState.FAILED, "Failed", f"The pipeline failed: {error}"
        )
        return DiagnosisState.FAILED
    return _complete(diagnosis_id, attempt, document)


def design_diagnoses_reap(*, now: datetime | None = None) -> dict[str, list[int]]:
    """Claim again, or fail, diagnoses whose worker stopped answering; resend lost messages:
    ``apps.analysis.services.reap_stale``, as for runs (beat calls both). A diagnosis queued
    again gives the same document (the same world and seed). Returns the ids per action."""
    return reap_stale(DesignDiagnosis.objects.all(), enqueue=_enqueue, now=now)


@transaction.atomic
def _complete(diagnosis_id: int, attempt: int, document: dict[str, Any]) -> str:
    diagnosis = DesignDiagnosis.objects.get(pk=diagnosis_id)
    # The freeze locks this row too: a diagnosis is attached to a draft, or to nothing.
    version = ProtocolVersion.objects.select_for_update().get(pk=diagnosis.version_id)
    if version.state != VersionState.DRAFT:
        _end(
            diagnosis_id,
            attempt,
            DiagnosisState.FAILED,
            "Failed",
            "The version was frozen while the diagnosis ran; diagnose the next draft instead.",
        )
        return DiagnosisState.FAILED
    blob = blob_store(content=canonical_json(document))
    updated = _mine(diagnosis_id, attempt).update(
        state=DiagnosisState.SUCCEEDED,
        result=blob,
        progress=100,
        progress_message="Done",
        finished_at=timezone.now(),
    )
    return DiagnosisState.SUCCEEDED if updated else "lost"
