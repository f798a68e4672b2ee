"""The scheduled expiry runs through the broker on a real worker, with nobody calling next."""

from datetime import timedelta

import pytest
from celery.contrib.testing.worker import start_worker
from django.conf import settings
from django.utils import timezone

from apps.raters.models import Assignment
from apps.raters.services import scoring_open, task_next
from config.celery import app
from tests.factories import frozen_study


def test_beat_schedules_the_expiry_every_minute():
    entry = settings.CELERY_BEAT_SCHEDULE["raters-assignments-expire"]
    assert entry["schedule"] == 60.0
    app.loader.import_default_modules()
    assert entry["task"] in app.tasks


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_returns_an_expired_reservation_to_the_pool():
    study = frozen_study(responses=1)
    scoring_open(version=study.version, user=study.pi)
    assignment = task_next(version_or_none=None, reviewer=study.reviewers[0])
    Assignment.objects.filter(pk=assignment.pk).update(
        expires_at=timezone.now() - timedelta(seconds=5)
    )
    entry = settings.CELERY_BEAT_SCHEDULE["raters-assignments-expire"]
    app.conf.task_always_eager = False
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
            # What beat does each minute: send the scheduled task by name through the broker.
            result = app.send_task(entry["task"])
            assert result.get(timeout=30) == 1
    finally:
        app.conf.task_always_eager = settings.CELERY_TASK_ALWAYS_EAGER
    assignment.refresh_from_db()
    assignment.task.refresh_from_db()
    assert assignment.outcome == "expired"
    assert assignment.task.state == "open"
