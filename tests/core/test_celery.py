"""Celery's configuration, and a real worker against Redis finishing a task."""

import pytest
from celery.contrib.testing.worker import start_worker

from config.celery import app, ping


def test_celery_speaks_json_and_survives_lost_workers():
    conf = app.conf
    assert conf.task_serializer == "json"
    assert conf.accept_content == ["json"]
    assert conf.task_acks_late is True
    assert conf.task_reject_on_worker_lost is True
    assert 0 < conf.task_soft_time_limit < conf.task_time_limit


@pytest.mark.redis
def test_a_real_worker_finishes_a_task(settings):
    app.conf.task_always_eager = False
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
            result = ping.delay()
            assert result.get(timeout=20) == "pong"
    finally:
        app.conf.task_always_eager = settings.CELERY_TASK_ALWAYS_EAGER
