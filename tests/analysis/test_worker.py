"""Real workers against Redis: a run end to end, and a worker killed mid-run.

What the kill test shows: a worker process SIGKILLed while computing leaves the run ``running``
with no result hash, no input hash and no new blob; the reaper (called directly, as beat would)
requeues it once its heartbeat is stale; a second worker then completes it (``attempts`` = 2).
What it does not show: the broker redelivering the killed worker's own message — with Redis
that happens only after the visibility timeout (an hour), which is why the reaper exists.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from celery.contrib.testing.worker import start_worker
from django.conf import settings as django_settings
from django.db import connection

from apps.analysis.models import AnalysisRun, RunState
from apps.analysis.pipelines import unregister_pipeline
from apps.analysis.services import analysis_run_request, analysis_runs_reap
from apps.protocols.models import Blob
from config.celery import app
from tests.factories import opb_study

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def broker(settings):
    """Send tasks to Redis for real (tests otherwise run them eagerly), and clean up after."""
    app.conf.task_always_eager = False
    app.control.purge()
    yield app
    app.control.purge()
    app.conf.task_always_eager = settings.CELERY_TASK_ALWAYS_EAGER


def _wait_for(run, predicate, timeout=90.0, *, beat=False):
    """Poll ``run`` until ``predicate`` holds. ``beat``: also call the reaper every 15 s, as
    beat does in a deployment, so that a queue message lost on a shared broker (another
    process on the same Redis database took it) is sent again once the run has waited
    longer than the heartbeat timeout, instead of the run waiting for ever."""
    deadline = time.monotonic() + timeout
    next_beat = time.monotonic() + 15
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if predicate(run):
            return run
        if beat and time.monotonic() >= next_beat:
            analysis_runs_reap()
            next_beat = time.monotonic() + 15
        time.sleep(0.25)
    pytest.fail(
        f"run {run.pk} did not get there in {timeout} s: {run.state} {run.progress_message}"
    )


@pytest.mark.redis
def test_a_real_worker_runs_a_real_pipeline_end_to_end(transactional_db, broker):
    study = opb_study(evaluands=1)
    with start_worker(broker, pool="solo", perform_ping_check=False, shutdown_timeout=30):
        run = analysis_run_request(version=study.version, user=study.pi)
        run = _wait_for(run, lambda r: r.state in (RunState.SUCCEEDED, RunState.FAILED))
    assert run.state == RunState.SUCCEEDED, run.error
    assert run.attempts == 1 and run.progress == 100
    assert Blob.objects.filter(sha256=run.result_sha256).exists()


def _database_url() -> str:
    s = connection.settings_dict
    password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
    return (
        f"postgres://{s['USER']}{password}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/"
        f"{s['NAME']}"
    )


def _worker(gate: Path, name: str) -> subprocess.Popen:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": _database_url(),  # the test database: the worker sees committed rows
        "REDIS_URL": django_settings.REDIS_URL,
        "ANALYSIS_TEST_GATE": str(gate),
        "PYTHONPATH": str(ROOT),
    }
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "tests.analysis.blocking_worker",
        "worker",
        "--pool=solo",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "-l",
        "warning",
        "-n",
        f"{name}-{os.getpid()}@%h",
    ]
    return subprocess.Popen(command, cwd=ROOT, env=env)


@pytest.mark.redis
@pytest.mark.postgres
def test_a_worker_killed_mid_run_leaves_no_result_and_the_run_completes_later(
    transactional_db, broker, settings, tmp_path
):
    from tests.analysis import blocking_worker

    gate = tmp_path / "gate"
    gate.touch()
    study = opb_study(evaluands=1, pipeline=blocking_worker.KIND)
    blobs = Blob.objects.count()
    first = _worker(gate, "doomed")
    try:
        run = analysis_run_request(version=study.version, user=study.pi, kind=blocking_worker.KIND)
        run = _wait_for(run, lambda r: r.progress_message == "blocking", timeout=120, beat=True)
        assert run.state == RunState.RUNNING and run.attempts == 1
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()

    run.refresh_from_db()
    assert run.state == RunState.RUNNING  # nobody finished it...
    assert run.result_sha256 == "" and run.input_sha256 == ""  # ...and nothing half-done exists
    assert Blob.objects.count() == blobs

    settings.ANALYSIS_HEARTBEAT_TIMEOUT_SECONDS = 1
    time.sleep(1.5)  # the dead worker's heartbeat goes stale
    assert analysis_runs_reap()["requeued"] == [run.pk]
    run.refresh_from_db()
    assert run.state == RunState.QUEUED

    gate.unlink()
    second = _worker(gate, "survivor")
    try:
        run = _wait_for(run, lambda r: r.state in (RunState.SUCCEEDED, RunState.FAILED))
    finally:
        second.send_signal(signal.SIGTERM)
        try:
            second.wait(timeout=30)
        except subprocess.TimeoutExpired:
            second.kill()
        unregister_pipeline(blocking_worker.KIND)
        _forget_unacknowledged(broker)
    assert run.state == RunState.SUCCEEDED, run.error
    assert run.attempts == 2
    assert Blob.objects.filter(sha256=run.result_sha256).exists()
    assert AnalysisRun.objects.filter(pk=run.pk, inputs__isnull=False).exists()


def _forget_unacknowledged(celery_app) -> None:
    # The killed worker's message waits in the transport's "unacked" hash until the visibility
    # timeout (an hour) and would then be redelivered to whatever test database a later
    # session uses; drop it so it cannot claim an unrelated run there.
    with celery_app.connection_for_write() as conn:
        client = conn.default_channel.client
        client.delete("unacked", "unacked_index")
