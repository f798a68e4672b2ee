"""Analysis runs: who may start one, numbering and the log, the claim, ownership, the reaper."""

import json
import logging
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone

from apps.analysis.models import AnalysisRun, RunState
from apps.analysis.pipelines import register_pipeline, unregister_pipeline
from apps.analysis.pipelines.base import Pipeline, PlanInputError
from apps.analysis.refs import run_ref
from apps.analysis.services import (
    MAX_ATTEMPTS,
    RunLost,
    analysis_run_claim,
    analysis_run_complete,
    analysis_run_fail,
    analysis_run_perform,
    analysis_run_progress,
    analysis_run_request,
    analysis_runs_reap,
)
from apps.deviations.models import LogEntry
from apps.protocols.models import Blob, ProtocolVersion, Withdrawal
from tests.factories import opb_declaration_as, opb_study

pytestmark = pytest.mark.django_db


def _queued(study):
    return analysis_run_request(version=study.version, user=study.pi)


def test_only_the_pi_may_start_a_run_from_the_page(client, study):
    # The role is the page's to check (apps.analysis.access.START_ROLES), not the service's; the
    # API's own matrix is in test_api.py.
    url = reverse("analysis:runs", args=[study.protocol.code, study.version.label])
    for person, status in ((study.auditor, 403), (study.editor, 403), (study.reviewers[0], 404)):
        client.force_login(person)
        assert client.post(url, {"kind": "opb", "reason": ""}).status_code == status
    assert not AnalysisRun.objects.exists()
    client.force_login(study.pi)
    confirmed = {"kind": "opb", "reason": "", "below_minimum": "True"}  # thin data: confirmed
    assert client.post(url, confirmed).status_code == 302
    assert AnalysisRun.objects.get().requested_by == study.pi


def test_a_draft_version_is_not_run(study):
    draft = ProtocolVersion.objects.create(protocol=study.protocol, label="2.0")
    with pytest.raises(ValidationError) as error:
        analysis_run_request(version=draft, user=study.pi)
    assert "frozen" in str(error.value.message_dict["version"])


def test_a_withdrawn_version_is_not_run(study):
    Withdrawal.objects.create(version=study.version, reason="flawed", withdrawn_by=study.pi)
    with pytest.raises(ValidationError, match="withdrawn"):
        analysis_run_request(version=study.version, user=study.pi)


def test_an_unknown_kind_is_refused_naming_the_field(study):
    with pytest.raises(ValidationError) as error:
        analysis_run_request(version=study.version, user=study.pi, kind="astrology")
    assert "astrology" in str(error.value.message_dict["kind"])


def test_a_request_records_the_frozen_hash_parameters_and_seed(study):
    run = _queued(study)
    assert run.state == RunState.QUEUED
    assert run.number == 1
    assert run.kind == "opb"  # from the protocol's plan template
    assert run.protocol_sha256 == study.version.sha256
    assert run.parameters["bootstrap_replicates"] == "200"
    assert run.seed == 20261130  # the plan's seed parameter
    assert run.result_sha256 == "" and run.input_sha256 == ""


def test_the_first_run_logs_analysis_and_a_second_logs_a_rerun(study):
    first = _queued(study)
    second = analysis_run_request(version=study.version, user=study.pi, reason="new scores")
    assert second.number == 2 and second.rerun_of == first
    kinds = list(
        LogEntry.objects.filter(protocol=study.protocol)
        .order_by("seq")
        .values_list("kind", flat=True)
    )
    assert kinds == ["freeze", "analysis", "rerun"]  # the freeze (the gate's) logged first
    rerun = LogEntry.objects.get(kind="rerun")
    assert "reruns run 1" in rerun.rationale and "new scores" in rerun.rationale
    assert run_ref(first) in rerun.refs
    assert run_ref(first)["number"] == 1


def test_the_task_is_enqueued_only_when_the_request_commits(
    study, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        run = _queued(study)
    assert len(callbacks) == 1
    run.refresh_from_db()
    assert run.state == RunState.QUEUED


def test_of_two_claims_of_one_run_exactly_one_wins(study):
    run = _queued(study)
    first = analysis_run_claim(run_id=run.pk)
    second = analysis_run_claim(run_id=run.pk)
    assert first == 1 and second is None
    run.refresh_from_db()
    assert run.state == RunState.RUNNING and run.attempts == 1 and run.heartbeat_at is not None


def test_a_running_run_with_a_stale_heartbeat_is_reclaimed_by_the_next_worker(study):
    run = _queued(study)
    assert analysis_run_claim(run_id=run.pk) == 1
    AnalysisRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert analysis_run_claim(run_id=run.pk) == 2
    # the first attempt can no longer report progress nor complete
    with pytest.raises(RunLost):
        analysis_run_progress(run_id=run.pk, attempt=1, percent=50, message="late")
    with pytest.raises(RunLost):
        analysis_run_complete(run_id=run.pk, attempt=1, inputs=b"{}", result=b"{}")
    assert not Blob.objects.filter(content=b"{}").exists()


def test_a_run_that_used_every_claim_is_not_reclaimed(study):
    run = _queued(study)
    AnalysisRun.objects.filter(pk=run.pk).update(
        state=RunState.RUNNING,
        attempts=MAX_ATTEMPTS,
        heartbeat_at=timezone.now() - timedelta(hours=1),
    )
    assert analysis_run_claim(run_id=run.pk) is None


def test_a_run_succeeds_with_a_result_and_inputs_bound_by_hash(study, run_now):
    run = run_now(study.version, study.pi)
    assert run.state == RunState.SUCCEEDED, run.error
    assert run.progress == 100 and run.finished_at and run.attempts == 1
    document = json.loads(bytes(run.result.content))
    assert document["input_sha256"] == run.input_sha256
    assert document["protocol"] == {
        "code": study.protocol.code,
        "version": "1.1",
        "sha256": study.version.sha256,
    }
    assert document["seed"] == run.seed and document["parameters"] == run.parameters
    assert {"numpy", "scipy", "statsmodels"} <= set(document["software"])
    inputs = json.loads(bytes(run.inputs.content))
    assert len(inputs["rows"]) == study.counts["administrations"]


def _failing(inputs, *, parameters, seed, progress):
    progress(50, "about to fail")
    raise RuntimeError("the estimator blew up")


@pytest.fixture
def failing_kind():
    register_pipeline(
        Pipeline(
            kind="_failing",
            title="fails",
            collect=lambda version: {"rows": []},
            compute=_failing,
            tidy=lambda inputs: ([], []),
            declaration=opb_declaration_as("_failing"),
        )
    )
    yield "_failing"
    unregister_pipeline("_failing")


@pytest.fixture
def failing_study(db, failing_kind):
    """A frozen study whose plan names the failing pipeline."""
    return opb_study(evaluands=1, pipeline=failing_kind)


def test_a_failure_leaves_no_result_and_no_blob(failing_study, run_now, failing_kind):
    study = failing_study
    blobs = Blob.objects.count()
    run = run_now(study.version, study.pi, kind=failing_kind)
    assert run.state == RunState.FAILED
    assert "the estimator blew up" in run.error
    # A plain sentence for the PI; the traceback is in the server log only.
    assert "Traceback" not in run.error and 'File "' not in run.error
    assert run.error.startswith("The _failing analysis failed on an internal error")
    assert run.result_sha256 == "" and run.input_sha256 == ""
    assert Blob.objects.count() == blobs


def _plan_input_failing(inputs, *, parameters, seed, progress):
    raise PlanInputError(
        "the margin epsilon must be below the scale's range", where="parameter epsilon"
    )


def test_a_failure_on_the_plans_data_names_the_input_and_logs_the_traceback_only_on_the_server(
    db, run_now, caplog
):
    """Issue #12 §2: what failed and on which input, for the PI; the traceback for the log."""
    register_pipeline(
        Pipeline(
            kind="_plan_input",
            title="refuses its input",
            collect=lambda version: {"rows": []},
            compute=_plan_input_failing,
            tidy=lambda inputs: ([], []),
            declaration=opb_declaration_as("_plan_input"),
        )
    )
    try:
        study = opb_study(evaluands=1, pipeline="_plan_input")
        with caplog.at_level(logging.ERROR, logger="apps.analysis.services"):
            run = run_now(study.version, study.pi, kind="_plan_input")
    finally:
        unregister_pipeline("_plan_input")
    assert run.state == RunState.FAILED
    assert run.error == (
        "The _plan_input analysis could not be computed: the margin epsilon must be below the "
        "scale's range (input: parameter epsilon)."
    )
    [record] = [r for r in caplog.records if r.name == "apps.analysis.services"]
    assert record.exc_info is not None and record.exc_info[0] is PlanInputError
    assert "Traceback" in caplog.text and "Traceback" not in run.error


def test_a_finished_run_writes_its_result_hash_into_the_log(study, run_now):
    run = run_now(study.version, study.pi)
    entry = LogEntry.objects.filter(protocol=study.protocol).order_by("seq").last()
    assert entry.kind == "analysis" and entry.actor is None
    assert f"succeeded: result {run.result_sha256}, inputs {run.input_sha256}" in entry.rationale
    assert {"type": "blob", "id": run.result_sha256, "label": "result document"} in entry.refs


def test_a_failed_run_is_logged_with_its_error(failing_study, run_now, failing_kind):
    study = failing_study
    run = run_now(study.version, study.pi, kind=failing_kind)
    entry = LogEntry.objects.filter(protocol=study.protocol).order_by("seq").last()
    assert entry.kind == "analysis"
    assert f"run {run.number} (_failing)" in entry.rationale
    assert "failed and keeps no result" in entry.rationale
    assert "the estimator blew up" in entry.rationale


def test_a_failed_run_can_be_run_again(failing_study, run_now, failing_kind):
    study = failing_study
    failed = run_now(study.version, study.pi, kind=failing_kind)
    # The pipeline is mended (a fixed server, say): the same plan's pipeline runs again.
    register_pipeline(
        Pipeline(
            kind=failing_kind,
            title="mended",
            collect=lambda version: {"rows": []},
            compute=lambda inputs, **kwargs: {"ok": True},
            tidy=lambda inputs: ([], []),
        )
    )
    again = run_now(study.version, study.pi)
    assert failed.state == RunState.FAILED and again.state == RunState.SUCCEEDED
    assert again.rerun_of == failed


def test_a_run_that_is_not_queued_is_not_performed_again(study, run_now):
    run = run_now(study.version, study.pi)
    assert analysis_run_perform(run_id=run.pk) == "not claimed"


def test_fail_only_touches_an_unfinished_run_of_its_own_attempt(study):
    run = _queued(study)
    analysis_run_claim(run_id=run.pk)
    assert analysis_run_fail(run_id=run.pk, attempt=2, error="not mine") is False
    assert analysis_run_fail(run_id=run.pk, attempt=1, error="mine") is True
    assert analysis_run_fail(run_id=run.pk, error="again") is False
    run.refresh_from_db()
    assert run.state == RunState.FAILED and run.error == "mine"


def test_the_reaper_requeues_a_stale_run_and_fails_one_out_of_claims(
    study, django_capture_on_commit_callbacks
):
    stale = timezone.now() - timedelta(hours=1)
    first, second = _queued(study), _queued(study)
    fresh = _queued(study)
    AnalysisRun.objects.filter(pk=first.pk).update(
        state=RunState.RUNNING, attempts=1, heartbeat_at=stale
    )
    AnalysisRun.objects.filter(pk=second.pk).update(
        state=RunState.RUNNING, attempts=MAX_ATTEMPTS, heartbeat_at=stale
    )
    AnalysisRun.objects.filter(pk=fresh.pk).update(
        state=RunState.RUNNING, attempts=1, heartbeat_at=timezone.now()
    )
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        done = analysis_runs_reap()
    assert done["requeued"] == [first.pk] and done["failed"] == [second.pk]
    assert len(callbacks) == 1  # the requeued run is sent to a worker again
    first.refresh_from_db(), second.refresh_from_db(), fresh.refresh_from_db()
    assert first.state == RunState.QUEUED and first.attempts == 1
    assert second.state == RunState.FAILED and "worker lost" in second.error
    assert second.result_sha256 == ""
    assert fresh.state == RunState.RUNNING


def test_the_reaper_resends_a_run_queued_too_long(study, django_capture_on_commit_callbacks):
    run = _queued(study)
    AnalysisRun.objects.filter(pk=run.pk).update(queued_at=timezone.now() - timedelta(hours=1))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        done = analysis_runs_reap()
    assert done["resent"] == [run.pk] and len(callbacks) == 1


def test_a_requeued_run_completes_on_its_second_claim(
    study, run_now, django_capture_on_commit_callbacks
):
    run = _queued(study)
    analysis_run_claim(run_id=run.pk)  # a worker claims it, then dies
    AnalysisRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    with django_capture_on_commit_callbacks(execute=True):
        analysis_runs_reap()
    run.refresh_from_db()
    assert run.state == RunState.SUCCEEDED and run.attempts == 2


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)  # the threads must see the committed run
def test_two_workers_claiming_at_the_same_moment_get_one_claim(monkeypatch):
    import threading

    from django.db import connection

    from tests.factories import opb_study

    # Committed requests would run their task at once (eager in tests): hold the tasks back.
    monkeypatch.setattr("apps.analysis.services._enqueue", lambda run_id: None)
    study = opb_study(code="RACE", evaluands=1, items_per_family=5, repetitions=1)
    for _ in range(5):
        run = analysis_run_request(version=study.version, user=study.pi)
        barrier = threading.Barrier(2)
        claims = []

        def worker(run_id=run.pk, barrier=barrier, claims=claims):
            try:
                barrier.wait()
                claims.append(analysis_run_claim(run_id=run_id))
            finally:
                connection.close()

        threads = [threading.Thread(target=worker) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(claims, key=str) == [1, None]
        run.refresh_from_db()
        assert run.attempts == 1 and run.state == RunState.RUNNING


def test_beat_runs_the_reaper_every_15_seconds(settings):
    from config.celery import app

    app.loader.import_default_modules()
    entry = settings.CELERY_BEAT_SCHEDULE["analysis-runs-reap"]
    assert entry["task"] in app.tasks and entry["schedule"] == 15.0
    assert "analysis.run_execute" in app.tasks


def test_a_starting_worker_reaps_a_killed_run_without_beat(
    study, django_capture_on_commit_callbacks
):
    """The worker_ready signal runs the reaper: recovery does not depend on beat running."""
    from celery.signals import worker_ready

    from apps.analysis.tasks import reap_when_a_worker_starts

    assert reap_when_a_worker_starts in [ref() for _, ref in worker_ready.receivers]
    killed = _queued(study)
    AnalysisRun.objects.filter(pk=killed.pk).update(
        state=RunState.RUNNING, attempts=1, heartbeat_at=timezone.now() - timedelta(hours=1)
    )
    with django_capture_on_commit_callbacks(execute=False):
        worker_ready.send(sender=None)
    killed.refresh_from_db()
    assert killed.state == RunState.QUEUED


def test_a_killed_run_is_requeued_within_60_seconds_of_its_last_heartbeat(
    study, settings, django_capture_on_commit_callbacks
):
    """Issue #33: a killed run waited 314 s. The worker's last beat is at most one interval
    before the kill; the reaper, every 15 s, requeues it once the beat is older than the
    timeout: kill + interval + timeout + period stays under a minute with the defaults."""
    from config.settings import base

    assert (
        base.ANALYSIS_HEARTBEAT_INTERVAL_SECONDS
        + base.ANALYSIS_HEARTBEAT_TIMEOUT_SECONDS
        + base.CELERY_BEAT_SCHEDULE["analysis-runs-reap"]["schedule"]
        < 60
    )
    settings.ANALYSIS_HEARTBEAT_TIMEOUT_SECONDS = base.ANALYSIS_HEARTBEAT_TIMEOUT_SECONDS
    run = _queued(study)
    analysis_run_claim(run_id=run.pk)  # a worker claims it, beats once, and is killed
    beat = AnalysisRun.objects.get(pk=run.pk).heartbeat_at
    with django_capture_on_commit_callbacks(execute=False):
        alive = analysis_runs_reap(now=beat + timedelta(seconds=29))
        dead = analysis_runs_reap(now=beat + timedelta(seconds=31))
    assert alive["requeued"] == [] and dead["requeued"] == [run.pk]


def _beating(recorded):
    def compute(inputs, *, parameters, seed, progress):
        import time

        from django.db import connection

        # Reads the run's heartbeat twice, a second apart, without reporting any progress.
        for _ in range(2):
            with connection.cursor() as cursor:
                cursor.execute("SELECT heartbeat_at FROM analysis_analysisrun")
                recorded.append(cursor.fetchone()[0])
            time.sleep(1)
        return {}

    return compute


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)  # the heartbeat thread's connection sees the run
def test_the_worker_beats_while_a_long_computation_reports_no_progress(settings):
    settings.ANALYSIS_HEARTBEAT_INTERVAL_SECONDS = 0.2
    recorded: list = []
    register_pipeline(
        Pipeline(
            kind="_beating",
            title="beats",
            collect=lambda version: {"rows": []},
            compute=_beating(recorded),
            tidy=lambda inputs: ([], []),
            declaration=opb_declaration_as("_beating"),
        )
    )
    try:
        study = opb_study(code="BEAT", evaluands=1, items_per_family=5, pipeline="_beating")
        _queued(study)  # performed at once (eager), inside this call
    finally:
        unregister_pipeline("_beating")
    assert len(recorded) == 2 and recorded[1] - recorded[0] >= timedelta(seconds=0.5)
