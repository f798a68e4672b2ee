"""The public registry API is anonymous and throttled per address."""

import pytest
from django.core.cache import cache
from rest_framework.throttling import AnonRateThrottle

pytestmark = pytest.mark.django_db

RATE = 3


@pytest.fixture
def strict_throttle(monkeypatch):
    monkeypatch.setattr(AnonRateThrottle, "THROTTLE_RATES", {"anon": f"{RATE}/minute"})
    cache.clear()
    yield
    cache.clear()


def test_anonymous_readers_are_throttled_per_address(client, strict_throttle):
    answers = [client.get("/api/v1/registry/protocols").status_code for _ in range(RATE + 1)]
    assert answers == [200] * RATE + [429]
    other = client.get("/api/v1/registry/protocols", REMOTE_ADDR="10.9.9.9")
    assert other.status_code == 200


def test_the_public_api_reads_no_credentials(client, strict_throttle, study_pi):
    # A signed-in PI is an anonymous reader here: the same throttle, the same answers.
    client.force_login(study_pi)
    answer = client.get("/api/v1/registry/protocols")
    assert answer.status_code == 200 and answer.json() == []
