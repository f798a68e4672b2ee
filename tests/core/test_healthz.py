from unittest import mock

import pytest
from django.db import OperationalError


@pytest.mark.django_db
def test_healthz_answers_ok_with_the_database_and_broker_states(client, settings):
    settings.REDIS_URL = ""
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"]["ok"] is True
    assert body["broker"]["mode"] == "eager"


@pytest.mark.django_db
def test_healthz_is_503_when_the_broker_is_down(client, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["broker"]["ok"] is False


@pytest.mark.django_db
def test_healthz_is_503_when_the_database_is_down(client, settings):
    settings.REDIS_URL = ""
    with mock.patch("apps.core.views.connection.cursor", side_effect=OperationalError("gone")):
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["database"] == {"ok": False, "vendor": mock.ANY, "error": "gone"}


@pytest.mark.redis
@pytest.mark.django_db
def test_healthz_sees_the_real_redis(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["broker"] == {"ok": True, "mode": "redis"}
