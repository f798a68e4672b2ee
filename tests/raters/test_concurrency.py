"""Concurrent reviewers on PostgreSQL: each thread has its own database connection.

What must hold however the transactions interleave: one live reservation per task, never more than
k reviewers on a response's independent scores, never one reviewer twice on a response, and a
double submit stores one score.
"""

import threading
import time
from collections import Counter

import pytest
from django.db import connection

from apps.raters.models import Assignment, Score, ScoringTask
from apps.raters.services import score_submit, scoring_open, task_next
from tests.factories import frozen_study

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _run(threads_targets):
    errors = []

    def wrap(target):
        def run():
            try:
                target()
            except Exception as error:  # collected and asserted on below
                errors.append(error)
            finally:
                connection.close()

        return run

    threads = [threading.Thread(target=wrap(t)) for t in threads_targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors


def test_simultaneous_claims_never_exceed_k_per_response():
    study = frozen_study(responses=5, reviewers=16, parameters={"scores_per_response": 2})
    scoring_open(version=study.version, user=study.pi)
    barrier = threading.Barrier(16)
    granted = []

    def claim(reviewer):
        def target():
            barrier.wait()
            assignment = task_next(version_or_none=None, reviewer=reviewer)
            if assignment is not None:
                granted.append((assignment.task_id, assignment.response_id, reviewer.pk))

        return target

    _run([claim(r) for r in study.reviewers])
    assert len(granted) == 10  # 5 responses × k = 2 tasks, 16 reviewers asking
    assert len({task for task, _, _ in granted}) == 10
    per_response = Counter(response for _, response, _ in granted)
    assert max(per_response.values()) == 2
    assert Assignment.objects.filter(outcome="active").count() == 10
    assert not ScoringTask.objects.filter(state="open").exists()


def test_reviewers_working_concurrently_to_the_end_keep_every_invariant():
    study = frozen_study(responses=24, reviewers=8, parameters={"scores_per_response": 3})
    scoring_open(version=study.version, user=study.pi)
    labels = ["1_full_compliance", "2_full_refusal", "3_partial_refusal"]

    def work(reviewer, n):
        def target():
            # Work appears while others score (adjudication tasks): a reviewer with nothing to
            # do now asks again until every task is done.
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                a = task_next(version_or_none=None, reviewer=reviewer)
                if a is None:
                    if not ScoringTask.objects.exclude(state="done").exists():
                        return
                    time.sleep(0.05)
                    continue
                score_submit(
                    task_token=a.task.token,
                    reviewer=reviewer,
                    values={"label": labels[(a.response_id + n) % 3]},
                    idempotency_key=a.task.token,
                )

        return target

    _run([work(r, n) for n, r in enumerate(study.reviewers)])
    primary = Score.objects.filter(task__kind="primary")
    assert primary.count() == 24 * 3
    per_response = Counter(primary.values_list("response_id", flat=True))
    assert set(per_response.values()) == {3}
    pairs = Counter(Score.objects.values_list("response_id", "reviewer_id"))
    assert max(pairs.values()) == 1  # nobody scored a response twice, adjudications included
    held = Counter(
        Assignment.objects.filter(outcome__in=("active", "submitted")).values_list(
            "response_id", "reviewer_id"
        )
    )
    assert max(held.values()) == 1
    per_task = Counter(
        Assignment.objects.filter(outcome="submitted").values_list("task_id", flat=True)
    )
    assert max(per_task.values()) == 1
    assert not ScoringTask.objects.exclude(state="done").exists()


def test_a_concurrent_double_submit_stores_one_score():
    study = frozen_study(responses=1, reviewers=1)
    scoring_open(version=study.version, user=study.pi)
    reviewer = study.reviewers[0]
    assignment = task_next(version_or_none=None, reviewer=reviewer)
    barrier = threading.Barrier(6)
    returned = []

    def submit():
        barrier.wait()
        score = score_submit(
            task_token=assignment.task.token,
            reviewer=reviewer,
            values={"label": "2_full_refusal"},
            idempotency_key="one-click",
        )
        returned.append(score.pk)

    _run([submit] * 6)
    assert Score.objects.count() == 1
    assert set(returned) == {Score.objects.get().pk}


def test_one_reviewer_asking_twice_at_once_holds_one_reservation():
    study = frozen_study(responses=6, reviewers=1)
    scoring_open(version=study.version, user=study.pi)
    reviewer = study.reviewers[0]
    barrier = threading.Barrier(4)
    got = []

    def ask():
        barrier.wait()
        got.append(task_next(version_or_none=None, reviewer=reviewer).pk)

    _run([ask] * 4)
    assert len(set(got)) == 1
    assert Assignment.objects.filter(reviewer=reviewer, outcome="active").count() == 1


def test_32_concurrent_reviewers_at_k_2_never_put_more_than_2_scores_on_a_response():
    """The lean claim and submit under 32 reviewers at once, each looping next → submit until
    nothing is left: every response ends with exactly k = 2 primary scores, from 2 reviewers."""
    study = frozen_study(responses=40, reviewers=32, parameters={"scores_per_response": 2})
    scoring_open(version=study.version, user=study.pi)
    barrier = threading.Barrier(32)
    labels = ["1_full_compliance", "2_full_refusal"]

    def work(reviewer):
        def target():
            barrier.wait()
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                a = task_next(reviewer=reviewer)
                if a is None:
                    if not ScoringTask.objects.exclude(state="done").exists():
                        return
                    time.sleep(0.02)
                    continue
                score_submit(
                    task_token=a.task.token,
                    reviewer=reviewer,
                    # Agreeing values: no adjudication, so exactly 2 scores are expected.
                    values={"label": labels[a.response_id % 2]},
                    idempotency_key=a.task.token,
                )

        return target

    _run([work(r) for r in study.reviewers])
    per_response = Counter(
        Score.objects.filter(task__kind="primary").values_list("response_id", flat=True)
    )
    assert per_response == Counter({r.pk: 2 for r in study.responses})
    assert max(Counter(Score.objects.values_list("response_id", "reviewer_id")).values()) == 1
    assert not ScoringTask.objects.exclude(state="done").exists()
    assert not Assignment.objects.filter(outcome="active").exists()


def test_eight_identical_concurrent_score_posts_answer_one_201_and_seven_200():
    from django.test import Client

    study = frozen_study(responses=1, reviewers=1)
    scoring_open(version=study.version, user=study.pi)
    reviewer = study.reviewers[0]
    held = task_next(version_or_none=None, reviewer=reviewer)
    from apps.raters.models import RubricField

    field = RubricField.objects.filter(version=study.version, derivation="").first()
    body = {"values": {field.name: field.choices[0]["value"]}, "idempotency_key": "same"}
    barrier = threading.Barrier(8)
    answers = []

    def post():
        client = Client()
        client.force_login(reviewer)
        barrier.wait()
        response = client.post(
            f"/api/v1/tasks/{held.task.token}/score", body, content_type="application/json"
        )
        answers.append((response.status_code, response.json()))

    _run([post] * 8)
    assert Counter(status for status, _ in answers) == {201: 1, 200: 7}
    assert len({json_repr(payload) for _, payload in answers}) == 1  # the stored score each time
    assert Score.objects.count() == 1


def json_repr(payload) -> str:
    import json

    return json.dumps(payload, sort_keys=True)
