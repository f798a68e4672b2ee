"""Issue #37 §7: amending a version in scoring says how many tasks it still has open and closes
its scoring (the default) or keeps it open; closed, its tasks leave every reviewer's queue."""

import re

import pytest
from django.db import DatabaseError, transaction
from django.urls import reverse

from apps.deviations.models import LogEntry
from apps.protocols.models import ProtocolVersion
from apps.raters.models import ScoringClosing, ScoringOpening, ScoringTask, TaskState
from apps.raters.selectors import queue_versions, reviewer_queues
from apps.raters.services import scoring_open
from apps.raters.services.closing import scoring_close
from tests.factories import frozen_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def in_scoring():
    study = frozen_study(responses=3)
    scoring_open(version=study.version, user=study.pi)
    return study


def _open(version) -> int:
    return ScoringTask.objects.filter(
        version=version, state__in=(TaskState.OPEN, TaskState.ASSIGNED)
    ).count()


def test_the_amend_page_counts_the_open_tasks_and_closes_scoring_by_default(client, in_scoring):
    study = in_scoring
    left = _open(study.version)
    assert left > 0
    client.force_login(study.pi)
    url = reverse("protocols:amend", args=[study.version.protocol.code, study.version.label])
    page = client.get(url).content.decode()
    assert f"has {left} open scoring task" in page
    assert re.search(r'value="close"[^>]*checked', page), "closing is the default"
    response = client.post(url, {"scoring": "close"})
    assert response.status_code == 302
    assert ScoringClosing.objects.filter(version=study.version).exists()
    reviewer = study.reviewers[0]
    assert study.version not in queue_versions(reviewer=reviewer)
    assert reviewer_queues(reviewer=reviewer) == []
    entry = LogEntry.objects.filter(rationale__startswith="Scoring of v1.0 closed").get()
    assert f"closed with {left} tasks unscored: v1.1 amends it" in entry.rationale


def test_keeping_scoring_open_leaves_the_old_versions_tasks_in_the_queue(client, in_scoring):
    study = in_scoring
    client.force_login(study.pi)
    url = reverse("protocols:amend", args=[study.version.protocol.code, study.version.label])
    assert client.post(url, {"scoring": "keep"}).status_code == 302
    assert ProtocolVersion.objects.filter(protocol=study.version.protocol, label="1.1").exists()
    assert not ScoringClosing.objects.exists()
    assert study.version in queue_versions(reviewer=study.reviewers[0])
    # Once the amendment is frozen and open too, the study's name in the picker says which.
    new = ProtocolVersion.objects.get(protocol=study.version.protocol, label="1.1")
    ScoringOpening.objects.create(version=new, opened_by=study.pi)
    (choice,) = reviewer_queues(reviewer=study.reviewers[0])
    assert choice["name"].endswith("(v1.0, v1.1)")


def test_a_closed_version_cannot_be_opened_again(in_scoring):
    from django.core.exceptions import ValidationError

    from apps.protocols.services import version_amend

    study = in_scoring
    version_amend(version=study.version, user=study.pi, close_work=True)
    with pytest.raises(ValidationError, match=r"was closed: v1\.1 amends it"):
        scoring_open(version=study.version, user=study.pi)


def test_the_api_closes_scoring_unless_told_to_keep_it(client, in_scoring):
    study = in_scoring
    client.force_login(study.pi)
    url = f"/api/v1/protocols/{study.version.protocol.code}/versions/{study.version.label}/amend"
    response = client.post(url, {"close_scoring": False}, content_type="application/json")
    assert response.status_code == 201 and not ScoringClosing.objects.exists()


def test_the_api_closes_scoring_when_a_form_encoded_request_says_nothing(client, in_scoring):
    # A form-encoded body without the field must not read as "false" (DRF reads an absent HTML
    # checkbox as unticked unless the field allows null): the default, closing, holds.
    study = in_scoring
    client.force_login(study.pi)
    url = f"/api/v1/protocols/{study.version.protocol.code}/versions/{study.version.label}/amend"
    response = client.post(url, {})
    assert response.status_code == 201, response.content
    assert ScoringClosing.objects.filter(version=study.version).exists()


@pytest.mark.postgres
def test_a_closing_can_be_neither_undone_nor_rewritten(in_scoring):
    # Deleting the closing would reopen a superseded version's scoring with no log entry.
    study = in_scoring
    scoring_close(version=study.version, user=study.pi, reason="v1.1 amends it")
    closing = ScoringClosing.objects.get(version=study.version)
    with pytest.raises(DatabaseError, match=r"append-only|permission denied"), transaction.atomic():
        ScoringClosing.objects.filter(pk=closing.pk).delete()
    with pytest.raises(DatabaseError, match=r"append-only|permission denied"), transaction.atomic():
        ScoringClosing.objects.filter(pk=closing.pk).update(reason="never mind")
    assert ScoringClosing.objects.get(pk=closing.pk).reason == "v1.1 amends it"


def test_a_score_sent_after_scoring_closed_is_refused_and_not_stored(client, in_scoring):
    """A reviewer who held a task when the amendment closed scoring cannot store a score on the
    released reservation: before the fix it was taken as a late submission (201), a score on a
    version the PI had closed."""
    from apps.protocols.services import version_amend
    from apps.raters.models import Score
    from apps.raters.selectors import SCORING_CLOSED
    from apps.raters.services.queue import task_next

    study = in_scoring
    reviewer = study.reviewers[0]
    held = task_next(reviewer=reviewer)
    held.task.refresh_from_db()
    version_amend(version=study.version, user=study.pi, close_work=True)
    held.refresh_from_db()
    assert held.outcome == "released"
    client.force_login(reviewer)
    response = client.post(
        f"/api/v1/tasks/{held.task.token}/score",
        {"values": {"label": "1_full_compliance"}, "idempotency_key": "after-closing"},
        content_type="application/json",
    )
    assert response.status_code == 400, response.content
    assert SCORING_CLOSED in str(response.json())
    assert not Score.objects.filter(task=held.task).exists()
