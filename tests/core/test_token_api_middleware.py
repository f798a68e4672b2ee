"""The page-only middleware skipped for token requests to the reviewer queue's next and score
(``apps.core.middleware.TokenAPIMiddleware``): the same answers, the same headers, and every
other request through the whole stack."""

import pytest
from django.conf import settings
from django.db import OperationalError
from django.test import override_settings
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from apps.raters.services import scoring_open
from tests.factories import frozen_study

pytestmark = pytest.mark.django_db

LEAN = "apps.core.middleware.TokenAPIMiddleware"


@pytest.fixture
def study():
    study = frozen_study(responses=6, reviewers=1, parameters={"scores_per_response": 1})
    scoring_open(version=study.version, user=study.pi)
    return study


def _token_client(key: str) -> APIClient:
    # A new client for each middleware setting: a client loads the middleware once.
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


@pytest.fixture
def key(study) -> str:
    return Token.objects.create(user=study.reviewers[0]).key


@pytest.fixture
def client(key):
    return _token_client(key)


def _whole_stack():
    return override_settings(MIDDLEWARE=[m for m in settings.MIDDLEWARE if m != LEAN])


def _cycle(client) -> list:
    """next, a score with a bad body, a score, a repeat of it, next again: five answers."""
    held = client.post("/api/v1/tasks/next", {}, format="json")
    token = held.json()["task"]["token"]
    url = f"/api/v1/tasks/{token}/score"
    body = {"values": {"label": "2_full_refusal"}, "idempotency_key": f"k-{token}"}
    return [
        held,
        client.post(url, {"values": {"label": "not a label"}, "idempotency_key": "x"}, "json"),
        client.post(url, body, format="json"),
        client.post(url, body, format="json"),
        client.get("/api/v1/tasks/next"),
    ]


def test_a_token_request_skips_the_page_middleware_and_answers_as_the_whole_stack(key):
    lean = _cycle(_token_client(key))
    with _whole_stack():
        whole = _cycle(_token_client(key))
    assert [r.status_code for r in lean] == [200, 400, 201, 200, 200]
    assert [r.status_code for r in whole] == [r.status_code for r in lean]
    for a, b in zip(lean, whole, strict=True):
        assert set(a.headers) == set(b.headers)
        for name in ("Content-Type", "X-Frame-Options", "Content-Security-Policy", "Allow"):
            assert a.headers.get(name) == b.headers.get(name), name
        assert a.json().keys() == b.json().keys()
        assert int(a.headers["Content-Length"]) == len(a.content)
    # The lean path was taken (no session was made for the request), and not without it.
    assert not any(hasattr(r.wsgi_request, "session") for r in lean)
    assert all(hasattr(r.wsgi_request, "session") for r in whole)


def test_every_other_request_takes_the_whole_stack(study, client):
    # Another view, with the same token.
    assert hasattr(client.get("/api/v1/tasks/progress").wsgi_request, "session")
    # The same view, signed in with a session: CSRF is enforced as before.
    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(study.reviewers[0])
    refused = browser.post("/api/v1/tasks/next", {}, format="json")
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["detail"]
    # Another scheme, and a path that resolves to nothing.
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION="Bearer abc")
    assert hasattr(other.post("/api/v1/tasks/next").wsgi_request, "session")
    assert client.post("/api/v1/no/such/route").status_code == 404


def test_a_wrong_token_is_refused_on_the_lean_path(study):
    stranger = APIClient()
    stranger.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    answer = stranger.post("/api/v1/tasks/next", {}, format="json")
    assert answer.status_code == 401
    assert not hasattr(answer.wsgi_request, "session")


def test_a_database_fault_under_the_lean_path_answers_503(client, monkeypatch):
    def down(**kwargs):
        raise OperationalError("connection to server lost")

    monkeypatch.setattr("apps.raters.apis.task_next", down)
    answer = client.post("/api/v1/tasks/next", {}, format="json")
    assert answer.status_code == 503
    assert answer.headers["Retry-After"] == "30"
    assert "database is unavailable" in answer.json()["detail"]
