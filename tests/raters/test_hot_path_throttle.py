"""The queue's two hot endpoints (next and score) carry no per-user rate throttle, while every
other API route keeps it (``apps.raters.apis.QueueHotPath``: a reviewer holds one reservation at
a time, so a flood of requests takes no task from anyone, and the throttle would cost two cache
round trips per request)."""

import pytest
from django.core.cache import cache
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from rest_framework.throttling import UserRateThrottle

from apps.raters.services import scoring_open
from tests.factories import frozen_study

pytestmark = pytest.mark.django_db

RATE = 3  # requests per minute per user, far below what the cycles below send


@pytest.fixture
def strict_throttle(monkeypatch):
    monkeypatch.setattr(UserRateThrottle, "THROTTLE_RATES", {"user": f"{RATE}/minute"})
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def client(strict_throttle):
    study = frozen_study(responses=8, reviewers=1, parameters={"scores_per_response": 1})
    scoring_open(version=study.version, user=study.pi)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=study.reviewers[0])}")
    return client


def test_next_and_score_are_never_throttled_where_other_routes_are(client):
    answers = []
    for i in range(6):  # 12 requests, four times the rate
        held = client.post("/api/v1/tasks/next", {}, format="json")
        answers.append(held.status_code)
        token = held.json()["task"]["token"]
        scored = client.post(
            f"/api/v1/tasks/{token}/score",
            {"values": {"label": "2_full_refusal"}, "idempotency_key": f"k{i}"},
            format="json",
        )
        answers.append(scored.status_code)
    assert answers == [200, 201] * 6

    # The same user on an ordinary route: throttled past the rate.
    progress = [client.get("/api/v1/tasks/progress").status_code for _ in range(RATE + 1)]
    assert progress[:RATE] == [200] * RATE
    assert progress[RATE] == 429
