"""The queue's API token cache: a cached token saves the database a query per request, and still
stops working at once when the token is deleted, the user deactivated or the role removed — in
any process, because the claim and the score write check them in their own statements."""

import pytest
from django.db import connection
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from apps.accounts.models import Membership, Role
from apps.protocols.services import protocol_member_remove
from apps.raters.models import Score
from apps.raters.services import scoring_open
from tests.factories import frozen_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def study():
    study = frozen_study(responses=4, reviewers=1, parameters={"scores_per_response": 1})
    scoring_open(version=study.version, user=study.pi)
    return study


def _client(user) -> tuple[APIClient, Token]:
    token = Token.objects.create(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client, token


def _score(client, token: str, key: str):
    return client.post(
        f"/api/v1/tasks/{token}/score",
        {"values": {"label": "2_full_refusal"}, "idempotency_key": key},
        format="json",
    )


def test_a_removed_roles_cached_token_stops_working_at_once(study):
    reviewer = study.reviewers[0]
    client, _ = _client(reviewer)
    task = client.post("/api/v1/tasks/next").json()["task"]  # the token is cached now
    assert task is not None
    membership = Membership.objects.get(
        user=reviewer, protocol=study.version.protocol, role=Role.REVIEWER
    )
    protocol_member_remove(membership=membership, actor=study.pi, reason="left the study")
    # Refused, with the reason (the revocation check) or as an unknown task (the lean path).
    assert _score(client, task["token"], "after-removal").status_code in (400, 404)
    assert client.post("/api/v1/tasks/next").json()["task"] is None
    assert not Score.objects.exists()


@pytest.mark.postgres
def test_a_token_deleted_by_another_process_stops_working_at_once(study):
    reviewer = study.reviewers[0]
    client, token = _client(reviewer)
    task = client.post("/api/v1/tasks/next").json()["task"]
    # Another gunicorn worker revokes the token: no signal reaches this process's cache.
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM authtoken_token WHERE key = %s", [token.key])
    assert _score(client, task["token"], "after-revoke").status_code == 401
    assert client.post("/api/v1/tasks/next").status_code == 401
    assert not Score.objects.exists()


@pytest.mark.postgres
def test_a_user_deactivated_by_another_process_is_refused_at_once(study):
    reviewer = study.reviewers[0]
    client, _ = _client(reviewer)
    task = client.post("/api/v1/tasks/next").json()["task"]
    with connection.cursor() as cursor:
        cursor.execute("UPDATE accounts_user SET is_active = false WHERE id = %s", [reviewer.pk])
    assert _score(client, task["token"], "after-deactivation").status_code == 401
    assert not Score.objects.exists()


def test_a_token_deleted_in_this_process_is_forgotten(study):
    reviewer = study.reviewers[0]
    client, token = _client(reviewer)
    assert client.post("/api/v1/tasks/next").status_code == 200
    token.delete()
    assert client.post("/api/v1/tasks/next").status_code == 401


def test_a_cached_token_needs_no_query_to_authenticate(study, django_assert_max_num_queries):
    from apps.accounts.authentication import CachedTokenAuthentication

    reviewer = study.reviewers[0]
    _, token = _client(reviewer)
    auth = CachedTokenAuthentication()
    user, _ = auth.authenticate_credentials(token.key)
    assert user.pk == reviewer.pk
    with django_assert_max_num_queries(0):
        again, _ = auth.authenticate_credentials(token.key)
    assert again.pk == reviewer.pk and again is not user
