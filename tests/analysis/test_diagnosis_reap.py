"""A design diagnosis whose worker is killed is not left "running" for ever (issue #35 §4): the
heartbeat marks the row alive while the worker computes, and the reaper beat calls every 15 s
queues a silent one again (another worker finishes it: the same world and seed give the same
document) or, after ``MAX_ATTEMPTS`` claims, fails it saying why."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.analysis.diagnosis.services import design_diagnoses_reap, design_diagnosis_request
from apps.analysis.models import DesignDiagnosis, DiagnosisState
from apps.analysis.services import MAX_ATTEMPTS
from tests.factories import xstest_shaped_draft

pytestmark = pytest.mark.django_db


@pytest.fixture
def killed(django_capture_on_commit_callbacks):
    """A diagnosis a worker claimed, then died on: running, its last heartbeat a minute old."""
    draft = xstest_shaped_draft(8, code="XS-REAP", evaluands=1)
    with django_capture_on_commit_callbacks(execute=False):  # no worker takes it yet
        diagnosis = design_diagnosis_request(
            version=draft, user=draft.created_by, world={}, sims=4, seed=5
        )
    minute_ago = timezone.now() - timedelta(seconds=60)
    DesignDiagnosis.objects.filter(pk=diagnosis.pk).update(
        state=DiagnosisState.RUNNING, attempts=1, heartbeat_at=minute_ago, progress=40
    )
    return diagnosis, minute_ago


def test_a_silent_diagnosis_is_queued_again_and_another_worker_finishes_it(
    killed, django_capture_on_commit_callbacks
):
    diagnosis, _ = killed
    with django_capture_on_commit_callbacks(execute=True):  # the tests' eager worker
        done = design_diagnoses_reap()
    assert done["requeued"] == [diagnosis.pk]
    diagnosis.refresh_from_db()
    assert diagnosis.state == DiagnosisState.SUCCEEDED, diagnosis.error
    assert diagnosis.attempts == 2 and diagnosis.result_id


def test_a_diagnosis_that_beats_is_left_alone(killed):
    diagnosis, minute_ago = killed
    # 29 s after its heartbeat (the timeout is 30 s): alive.
    done = design_diagnoses_reap(now=minute_ago + timedelta(seconds=29))
    assert done == {"requeued": [], "failed": [], "resent": []}
    assert DesignDiagnosis.objects.get(pk=diagnosis.pk).state == DiagnosisState.RUNNING


def test_after_its_last_claim_a_silent_diagnosis_fails_saying_why(killed):
    diagnosis, _ = killed
    DesignDiagnosis.objects.filter(pk=diagnosis.pk).update(attempts=MAX_ATTEMPTS)
    assert design_diagnoses_reap()["failed"] == [diagnosis.pk]
    diagnosis.refresh_from_db()
    assert diagnosis.state == DiagnosisState.FAILED
    assert "worker lost" in diagnosis.error and diagnosis.finished_at is not None


def test_a_queued_diagnosis_whose_message_was_lost_is_sent_again(
    killed, django_capture_on_commit_callbacks
):
    diagnosis, minute_ago = killed
    DesignDiagnosis.objects.filter(pk=diagnosis.pk).update(
        state=DiagnosisState.QUEUED, queued_at=minute_ago, attempts=0
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert design_diagnoses_reap()["resent"] == [diagnosis.pk]
    assert DesignDiagnosis.objects.get(pk=diagnosis.pk).state == DiagnosisState.SUCCEEDED


def test_a_finished_claim_does_not_overwrite_a_later_one(killed):
    """The first worker was slow, not dead: once reaped and claimed again, its late end is not
    written over the second claim's."""
    from apps.analysis.diagnosis.services import _end

    diagnosis, _ = killed
    DesignDiagnosis.objects.filter(pk=diagnosis.pk).update(attempts=2)  # claimed again
    _end(diagnosis.pk, 1, DiagnosisState.FAILED, "Failed", "late")
    assert DesignDiagnosis.objects.get(pk=diagnosis.pk).state == DiagnosisState.RUNNING
