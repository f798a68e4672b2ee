"""Writes of analysis runs: request, claim, progress, complete, fail, reap — and the execution.

The life of a run and who writes what:

- ``analysis_run_request`` (the PI, from the page or the API) creates a ``queued`` run with the
  frozen version's hash, the plan's parameters and seed, writes the deviation-log entry
  (``analysis`` for the first run of a kind on a version, ``rerun`` after that) and enqueues
  ``analysis_run_execute`` once the transaction commits.
- ``analysis_run_perform`` (the Celery task's body) claims the run, collects the inputs, computes
  the result and completes it; any error fails it. The claim is one conditional UPDATE, so of
  two workers handed the same run exactly one proceeds.
- While a run computes, a thread of its worker beats every few seconds (``_heartbeat``). A
  worker that dies leaves the run ``running`` with a stale heartbeat; the broker hands the
  message back (acks_late, reject_on_worker_lost) and the periodic ``analysis_runs_reap``
  (every 15 s) requeues the run once its heartbeat is older than the timeout (30 s), or fails
  it after ``MAX_ATTEMPTS`` claims: a killed run is back in the queue within 45 s.

Ownership: each claim increments ``attempts``; progress and completion name the attempt they
belong to and are refused (``RunLost``) once the run has been reaped or claimed again, so a
worker that was only slow cannot overwrite anything. The outcome — input blob, result blob,
hashes, state, finishing time, and an ``analysis`` log entry naming the result's and the inputs'
hashes — is written in one transaction: either all of it exists or none. A failure is logged
too, with the last line of its error.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, connections, transaction
from django.db.models import F, Max, QuerySet
from django.utils import timezone

from apps.accounts.models import User
from apps.analysis import inputs as data
from apps.analysis.judge import judge_confidence, validation_from_inputs
from apps.analysis.models import AnalysisRun, RunState
from apps.analysis.pipelines import get_pipeline, pipeline_kinds
from apps.analysis.pipelines.base import (
    RESULT_DOCUMENT_TYPE,
    Pipeline,
    PlanInputError,
    seed_from,
    software_versions,
)
from apps.analysis.refs import run_ref
from apps.core.canonical import canonical_json, sha256_hex
from apps.core.rows import full_clean_save
from apps.deviations.models import EntryKind
from apps.deviations.services import version_log_append
from apps.protocols.integrity import version_integrity_require
from apps.protocols.models import ProtocolVersion, VersionState
from apps.protocols.plans import version_pipeline
from apps.protocols.services import blob_store
from apps.raters.final import agreement_from_inputs

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 3


def heartbeat_timeout() -> timedelta:
    """How long a running run may go without a heartbeat before it counts as abandoned."""
    return timedelta(seconds=getattr(settings, "ANALYSIS_HEARTBEAT_TIMEOUT_SECONDS", 30))


@contextmanager
def heartbeat(rows: QuerySet[Any], *, name: str) -> Iterator[None]:
    """Set ``heartbeat_at`` of ``rows`` (the one row a worker owns, filtered so that it matches
    only while this worker owns it) every ``ANALYSIS_HEARTBEAT_INTERVAL_SECONDS`` while the body
    runs: analysis runs and design diagnoses alike.

    A thread of its own, so that a long computation that reports no progress (one model fit
    can take minutes) never looks abandoned, and the heartbeat timeout can be short: a killed
    worker's run is requeued within the timeout plus the reaper's period (issue #33: it took
    314 s). The thread uses its own database connection and stops when the filter no longer
    matches (the row was reaped, reclaimed or finished). Off when the interval is 0.
    """
    interval = float(getattr(settings, "ANALYSIS_HEARTBEAT_INTERVAL_SECONDS", 0) or 0)
    if interval <= 0:
        yield
        return
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(interval):
                if not rows.update(heartbeat_at=timezone.now()):
                    return
        except Exception:  # a missed beat is the reaper's business, never the work's failure
            logger.warning("heartbeat of %s stopped", name, exc_info=True)
        finally:
            connections.close_all()  # this thread's own connections

    thread = threading.Thread(target=beat, name=f"heartbeat-{name}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=interval + 5)


class RunLost(Exception):
    """The run is no longer this worker's: it was reaped, reclaimed or finished elsewhere."""


def _enqueue(run_id: int) -> None:
    from apps.analysis.tasks import analysis_run_execute

    analysis_run_execute.delay(run_id)


def analysis_run_request(
    *, version: ProtocolVersion, user: User, kind: str | None = None, reason: str = ""
) -> AnalysisRun:
    """Queue a run of ``version``'s analysis plan and return it.

    First the version's frozen rows are rebuilt and hashed again (``version_integrity_require``,
    outside the request's transaction so that the alarm entry stays written): a version whose
    rows no longer give its hash is refused with an ``IntegrityAlarm`` on ``version``.

    Who may ask is checked by the caller (``apps.analysis.access.START_ROLES``: the protocol's
    PI); ``user`` is recorded as the run's requester. The version must be frozen and not
    withdrawn; the pipeline is the one its frozen plan names, and ``kind``, when given, must be
    that one (refused before anything is queued). A second run of the same kind on the version
    is a rerun: it names the run it reruns and writes a ``rerun`` entry to the deviation log
    (``reason`` goes into it); the first writes an ``analysis`` entry. The task is enqueued
    when the transaction commits.

    Raises ValidationError naming the field: ``version`` (not frozen, withdrawn, no hash),
    ``kind`` (unknown or no pipeline for the template), ``parameters`` (an unreadable seed).
    """
    version_integrity_require(version=version)
    return _analysis_run_request(version=version, user=user, kind=kind, reason=reason)


@transaction.atomic
def _analysis_run_request(
    *, version: ProtocolVersion, user: User, kind: str | None, reason: str
) -> AnalysisRun:
    # Lock the version row so that two requests at once get different numbers.
    version = (
        ProtocolVersion.objects.select_for_update().select_related("protocol").get(pk=version.pk)
    )
    if version.state != VersionState.FROZEN:
        raise ValidationError({"version": "Only a frozen version's plan can be run."})
    if hasattr(version, "withdrawal"):
        raise ValidationError({"version": "This version was withdrawn; its plan is not run."})
    if not version.sha256:
        raise ValidationError({"version": "This version has no frozen document hash."})
    named = version_pipeline(version)
    if named is None:
        raise ValidationError(
            {
                "kind": f"The frozen plan of {version} names no analysis pipeline, so it cannot "
                "be analysed; amend it and name one on the draft page."
            }
        )
    if kind and kind != named:
        raise ValidationError(
            {
                "kind": f"The frozen plan of {version} names the {named} pipeline; only {named} "
                f"can be run on it, not {kind}."
            }
        )
    kind = named
    if kind not in pipeline_kinds():
        raise ValidationError(
            {"kind": f"The frozen plan names the pipeline {kind!r}, which this server lacks."}
        )
    parameters = data.plan_parameters(version)
    try:
        seed, _ = seed_from(parameters, version.sha256)
    except ValueError as error:
        raise ValidationError({"parameters": str(error)}) from error

    previous = AnalysisRun.objects.filter(version=version, kind=kind).order_by("-number").first()
    number = (
        AnalysisRun.objects.filter(version=version).aggregate(top=Max("number"))["top"] or 0
    ) + 1
    now = timezone.now()
    run = AnalysisRun(
        version=version,
        number=number,
        kind=kind,
        requested_by=user,
        queued_at=now,
        protocol_sha256=version.sha256,
        parameters=parameters,
        seed=seed,
        rerun_of=previous,
        progress_message="Waiting for a worker",
    )
    full_clean_save(run)
    said = reason.strip()
    if previous is None:
        entry_kind, refs = EntryKind.ANALYSIS, [run_ref(run)]
        rationale = f"Analysis run {number} ({kind}) of {version} requested."
        rationale += f" {said}" if said else ""
    else:
        entry_kind, refs = EntryKind.RERUN, [run_ref(run), run_ref(previous)]
        rationale = f"Analysis run {number} ({kind}) of {version} reruns run {previous.number}."
        rationale += f" Reason: {said}" if said else ""
    version_log_append(version, kind=entry_kind, rationale=rationale, actor=user, refs=refs)
    transaction.on_commit(lambda: _enqueue(run.pk))
    return run


@transaction.atomic
def analysis_run_claim(*, run_id: int) -> int | None:
    """Claim a run for this worker; returns the attempt number that owns it, or None.

    A queued run is claimed by one conditional UPDATE (two workers: exactly one wins). A run
    still ``running`` whose heartbeat is older than ``heartbeat_timeout()`` is reclaimed the
    same way — its worker died and the broker handed the message back — unless it has used
    ``MAX_ATTEMPTS`` claims. Anything else (running and alive, finished) is not claimed.
    """
    now = timezone.now()
    claim = {
        "state": RunState.RUNNING,
        "attempts": F("attempts") + 1,
        "started_at": now,
        "heartbeat_at": now,
        "progress": 0,
        "progress_message": "Started",
    }
    claimed = AnalysisRun.objects.filter(pk=run_id, state=RunState.QUEUED).update(**claim)
    if not claimed:
        claimed = AnalysisRun.objects.filter(
            pk=run_id,
            state=RunState.RUNNING,
            heartbeat_at__lt=now - heartbeat_timeout(),
            attempts__lt=MAX_ATTEMPTS,
        ).update(**claim)
    if not claimed:
        return None
    # The UPDATE above holds the row's lock until this transaction commits, so this read sees
    # our own claim and nobody else's.
    return AnalysisRun.objects.values_list("attempts", flat=True).get(pk=run_id)


def analysis_run_progress(*, run_id: int, attempt: int, percent: int, message: str) -> None:
    """Record progress (and so a heartbeat) for the attempt that owns the run.

    Raises RunLost when the run is no longer running under ``attempt``.
    """
    updated = AnalysisRun.objects.filter(
        pk=run_id, state=RunState.RUNNING, attempts=attempt
    ).update(
        progress=max(0, min(99, int(percent))),
        progress_message=message[:200],
        heartbeat_at=timezone.now(),
    )
    if not updated:
        raise RunLost(f"analysis run {run_id} is no longer running under attempt {attempt}")


@transaction.atomic
def analysis_run_complete(
    *,
    run_id: int,
    attempt: int,
    inputs: bytes,
    result: bytes,
    deviations: tuple[str, ...] | list[str] = (),
) -> AnalysisRun:
    """Store the inputs and result documents as blobs and mark the run succeeded, at once.

    ``deviations``: what the pipeline's ``deviations_of`` read in the result (for OPB, the
    agreement minimum binding); each is written to the log as a deviation in the same
    transaction. Raises RunLost (and stores nothing) when the run is no longer running under
    ``attempt``.
    """
    run = AnalysisRun.objects.select_for_update().select_related("version__protocol").get(pk=run_id)
    if run.state != RunState.RUNNING or run.attempts != attempt:
        raise RunLost(f"analysis run {run_id} is no longer running under attempt {attempt}")
    run.inputs = blob_store(content=inputs)
    run.result = blob_store(content=result)
    # The result's hash goes into the hash chain: an auditor can tell later that the result
    # on record is the one this run produced, sealed or not (a hash reveals no outcome).
    version_log_append(
        run.version,
        kind=EntryKind.ANALYSIS,
        rationale=f"Analysis run {run.number} ({run.kind}) of {run.version} succeeded: result "
        f"{run.result.sha256}, inputs {run.inputs.sha256}.",
        refs=[
            run_ref(run),
            {"type": "blob", "id": run.result.sha256, "label": "result document"},
        ],
    )
    for message in deviations:
        version_log_append(
            run.version,
            kind=EntryKind.DEVIATION,
            rationale=f"Analysis run {run.number} ({run.kind}) of {run.version}: {message}.",
            refs=[run_ref(run)],
        )
    run.state = RunState.SUCCEEDED
    run.progress = 100
    run.progress_message = "Done"
    run.finished_at = timezone.now()
    run.heartbeat_at = run.finished_at
    run.save(
        update_fields=[
            "inputs",
            "result",
            "state",
            "progress",
            "progress_message",
            "finished_at",
            "heartbeat_at",
        ]
    )
    return run


@transaction.atomic
def analysis_run_fail(*, run_id: int, error: str, attempt: int | None = None) -> bool:
    """Mark a run failed with ``error``; it keeps no result. Returns whether it was failed.

    With ``attempt``, only the owning attempt may fail it (a lost worker fails nothing).
    """
    runs = AnalysisRun.objects.filter(pk=run_id, state__in=[RunState.QUEUED, RunState.RUNNING])
    if attempt is not None:
        runs = runs.filter(attempts=attempt)
    now = timezone.now()
    failed = runs.update(
        state=RunState.FAILED,
        error=error[:20_000],
        finished_at=now,
        progress_message="Failed",
    )
    if failed:
        run = AnalysisRun.objects.select_related("version__protocol").get(pk=run_id)
        reason = (error.strip().splitlines() or ["no error text"])[-1][:500]
        version_log_append(
            run.version,
            kind=EntryKind.ANALYSIS,
            rationale=f"Analysis run {run.number} ({run.kind}) of {run.version} failed and "
            f"keeps no result: {reason}",
            refs=[run_ref(run)],
        )
    return bool(failed)


def result_document(
    run: AnalysisRun, *, input_sha256: str, estimates: dict[str, Any]
) -> dict[str, Any]:
    """The run's result document: what was run, on what, with what, and the estimates.

    Nothing here depends on when or where the run happened (no run number, clock or host), so
    a rerun on the same inputs yields the same bytes; ``software`` names the library versions
    that can change the numbers, and byte-identity holds within one such environment.
    """
    version = run.version
    return {
        "document": RESULT_DOCUMENT_TYPE,
        "kind": run.kind,
        "protocol": {
            "code": version.protocol.code,
            "version": version.label,
            "sha256": run.protocol_sha256,
        },
        "input_sha256": input_sha256,
        "parameters": run.parameters,
        "seed": run.seed,
        "software": software_versions(),
        "estimates": estimates,
    }


def _collect_consistently(pipeline: Pipeline, version: ProtocolVersion) -> dict[str, Any]:
    # One snapshot for every query of the collection: on PostgreSQL a read-only REPEATABLE READ
    # transaction, so responses or scores arriving meanwhile are either all in or all out.
    outermost = not connection.in_atomic_block  # inside a test's transaction: no snapshot
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        collected: dict[str, Any] = pipeline.collect(version)
        # Machine scorers' agreement with the reviewers goes into every pipeline's result; its
        # inputs join the input document (and its hash) only where a field is machine-scored.
        machine = data.machine_agreement_inputs(version)
        if machine:
            collected = {**collected, "machine_agreement": machine}
        # A machine scorer against the human audit (issue 34 §5); only where there is one.
        validation = data.judge_validation_inputs(version)
        if validation:
            collected = {**collected, "judge_validation": validation}
        # Responses that several scorers of one role left with no final value (issue 34 §7).
        unresolved = data.unresolved_finals(version)
        if unresolved:
            collected = {**collected, "unresolved_finals": unresolved}
        return collected


def failure_message(error: BaseException, run: AnalysisRun) -> str:
    """What the PI reads when a run fails: what failed and on which input, no traceback.

    A ``PlanInputError`` (and a ``ValueError`` the pipeline raised about the plan's data) is
    the pipeline's own sentence, naming the input (parameter, cell, field); anything else is a
    fault of the server, said as such.
    """
    if isinstance(error, PlanInputError):
        where = f" (input: {error.where})" if error.where else ""
        return f"The {run.kind} analysis could not be computed: {error}{where}."
    if isinstance(error, ValueError | KeyError):
        text = str(error).strip().strip("'\"") or type(error).__name__
        return f"The {run.kind} analysis could not be computed: {text}."
    text = str(error).strip().splitlines()[0][:300] if str(error).strip() else ""
    return (
        f"The {run.kind} analysis failed on an internal error ({type(error).__name__}"
        f"{': ' + text if text else ''}); the server log holds the details of run {run.number}."
    )


def analysis_run_perform(*, run_id: int) -> str:
    """Claim, collect, compute and complete one run (the body of the Celery task).

    Returns ``"succeeded"``, ``"failed"``, ``"not claimed"`` (queued elsewhere, alive, or
    finished) or ``"lost"`` (reaped or reclaimed while computing: this worker stores nothing).
    """
    attempt = analysis_run_claim(run_id=run_id)
    if attempt is None:
        return "not claimed"
    run = AnalysisRun.objects.select_related("version__protocol").get(pk=run_id)

    def progress(percent: int, message: str) -> None:
        analysis_run_progress(run_id=run_id, attempt=attempt, percent=percent, message=message)

    with heartbeat(
        AnalysisRun.objects.filter(pk=run_id, state=RunState.RUNNING, attempts=attempt),
        name=f"analysis run {run_id}",
    ):
        return _perform(run, attempt, progress)


def _perform(run: AnalysisRun, attempt: int, progress: Callable[[int, str], None]) -> str:
    run_id = run.pk
    try:
        pipeline = get_pipeline(run.kind)
        progress(1, "Checking the frozen rows against their hash")
        # Never a cached verdict: what a run computes from must be what was frozen, now.
        version_integrity_require(version=run.version)
        progress(2, "Collecting the inputs")
        input_bytes = canonical_json(_collect_consistently(pipeline, run.version))
        input_sha256 = sha256_hex(input_bytes)
        progress(10, "Computing")
        # Compute on the decoded canonical bytes, exactly what the input hash covers.
        inputs = json.loads(input_bytes)
        estimates = pipeline.compute(
            inputs, parameters=run.parameters, seed=run.seed, progress=progress
        )
        if "machine_agreement" in inputs:
            estimates = {
                **estimates,
                "machine_agreement": agreement_from_inputs(inputs["machine_agreement"]),
            }
        if inputs.get("judge_validation"):
            estimates = {
                **estimates,
                "judge_validation": validation_from_inputs(
                    inputs["judge_validation"],
                    seed=run.seed,
                    confidence=judge_confidence(run.parameters),
                ),
            }
        if inputs.get("unresolved_finals"):
            listed = inputs["unresolved_finals"]
            estimates = {
                **estimates,
                "unresolved_finals": {"count": len(listed), "responses": listed},
            }
        document = result_document(run, input_sha256=input_sha256, estimates=estimates)
        deviations = pipeline.deviations_of(estimates) if pipeline.deviations_of else []
        analysis_run_complete(
            run_id=run_id,
            attempt=attempt,
            inputs=input_bytes,
            result=canonical_json(document),
            deviations=deviations,
        )
    except RunLost:
        logger.warning("analysis run %s was lost by attempt %s", run_id, attempt)
        return "lost"
    except Exception as error:  # any failure ends the run as failed, never half-done
        # The traceback goes to the server log only; the PI reads a plain sentence.
        logger.exception("analysis run %s failed", run_id)
        analysis_run_fail(run_id=run_id, attempt=attempt, error=failure_message(error, run))
        return "failed"
    return "succeeded"


def analysis_runs_reap(*, now: datetime | None = None) -> dict[str, list[int]]:
    """Requeue or fail runs whose worker stopped answering; re-send lost queue messages
    (``reap_stale`` with the runs' queue). Returns the run ids per action."""
    return reap_stale(AnalysisRun.objects.all(), enqueue=_enqueue, now=now)


def reap_stale(
    rows: QuerySet[Any],
    *,
    enqueue: Callable[[int], None],
    now: datetime | None = None,
) -> dict[str, list[int]]:
    """The reaper of worker-run rows (analysis runs, design diagnoses: ``state``, ``attempts``,
    ``heartbeat_at``, ``queued_at``, ``progress``, ``progress_message``, ``finished_at``,
    ``error``), which beat calls every 15 s:

    - ``running`` with a heartbeat older than ``heartbeat_timeout()``: queued again (and sent
      to a worker again by ``enqueue``) while it has had fewer than ``MAX_ATTEMPTS`` claims,
      else failed with "worker lost";
    - ``queued`` for longer than the timeout: its message is sent again (the claim makes a
      duplicate harmless).

    Each change is one conditional UPDATE, so a worker's heartbeat or claim racing the reaper
    wins or loses cleanly. Returns the row ids per action: requeued, failed, resent.
    """
    now = now or timezone.now()
    cutoff = now - heartbeat_timeout()
    done: dict[str, list[int]] = {"requeued": [], "failed": [], "resent": []}
    stale = rows.filter(state=RunState.RUNNING, heartbeat_at__lt=cutoff)
    for pk, attempts in stale.values_list("pk", "attempts"):
        same = stale.filter(pk=pk, attempts=attempts)
        with transaction.atomic():
            if attempts < MAX_ATTEMPTS:
                if same.update(
                    state=RunState.QUEUED,
                    queued_at=now,
                    progress=0,
                    progress_message=f"Requeued: the worker stopped answering (claim {attempts})",
                ):
                    done["requeued"].append(pk)
                    transaction.on_commit(partial(enqueue, pk))
            elif same.update(
                state=RunState.FAILED,
                finished_at=now,
                error=f"worker lost: no heartbeat since the last of {attempts} claims",
                progress_message="Failed",
            ):
                done["failed"].append(pk)
    waiting = rows.filter(state=RunState.QUEUED, queued_at__lt=cutoff)
    for pk in waiting.values_list("pk", flat=True):
        with transaction.atomic():
            if waiting.filter(pk=pk).update(queued_at=now):
                done["resent"].append(pk)
                transaction.on_commit(partial(enqueue, pk))
    return done
