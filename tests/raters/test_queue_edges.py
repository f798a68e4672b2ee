"""Edges of the reviewer queue's API found by trying to break it: one reservation at a time
across studies, a token revoked in another process, a stranger probing task tokens, and text
that cannot be stored."""

import pytest
from django.db import connection
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from apps.accounts.models import User
from apps.raters.models import Assignment, AssignmentOutcome, Score, StudyQueue
from apps.raters.services import task_next
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

LABEL = {"label": "2_full_refusal"}


def _queue(study) -> str:
    return StudyQueue.objects.get(protocol=study.version.protocol).token


def _api(user: User) -> tuple[APIClient, str]:
    key = Token.objects.create(user=user).key
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client, key


def _live(reviewer: User) -> int:
    return Assignment.objects.filter(reviewer=reviewer, outcome=AssignmentOutcome.ACTIVE).count()


def test_a_reviewer_holds_one_reservation_whichever_study_they_ask_for(two_studies):
    first, second, reviewer = two_studies
    client, _ = _api(reviewer)
    held = client.post("/api/v1/tasks/next", {"queue": _queue(first)}, format="json").json()
    other = client.post("/api/v1/tasks/next", {"queue": _queue(second)}, format="json").json()
    assert other["task"]["token"] == held["task"]["token"]
    assert _live(reviewer) == 1
    # The service answers the same way (the ORM path on SQLite, the lean statements here).
    assert task_next(reviewer=reviewer, queue=_queue(second)).task.token == held["task"]["token"]
    assert _live(reviewer) == 1
    # Once scored, the chosen study serves its own tasks.
    token = held["task"]["token"]
    scored = client.post(
        f"/api/v1/tasks/{token}/score",
        {"values": LABEL, "idempotency_key": "k1", "next": True, "queue": _queue(second)},
        format="json",
    ).json()
    following = scored["next"]["task"]["token"]
    assert Assignment.objects.get(task__token=following).version_id == second.version.pk
    assert _live(reviewer) == 1


def test_a_token_deleted_in_another_process_stops_reading_the_held_task(two_studies):
    _, _, reviewer = two_studies
    client, key = _api(reviewer)
    assert client.post("/api/v1/tasks/next", {}, format="json").status_code == 200
    assert client.get("/api/v1/tasks/next").json()["task"] is not None  # the key is now cached
    # As another process would: no signal reaches this process's token cache.
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM authtoken_token WHERE key = %s", [key])
    assert client.get("/api/v1/tasks/next").status_code == 401
    assert client.post("/api/v1/tasks/next", {}, format="json").status_code == 401


def test_a_user_deactivated_in_another_process_stops_reading_the_held_task(two_studies):
    _, _, reviewer = two_studies
    client, _ = _api(reviewer)
    assert client.post("/api/v1/tasks/next", {}, format="json").status_code == 200
    assert client.get("/api/v1/tasks/next").json()["task"] is not None
    User.objects.filter(pk=reviewer.pk).update(is_active=False)  # no post_save signal
    assert client.get("/api/v1/tasks/next").status_code == 401


@pytest.mark.parametrize("who", ["stranger", "pi"])
def test_someone_who_never_held_a_task_learns_nothing_from_its_token(two_studies, who):
    first, _, reviewer = two_studies
    token = task_next(reviewer=reviewer).task.token
    user = UserFactory() if who == "stranger" else first.pi
    client, _ = _api(user)
    for body in ({"values": {}, "idempotency_key": "z"}, {"values": LABEL, "idempotency_key": "y"}):
        answer = client.post(f"/api/v1/tasks/{token}/score", body, format="json")
        assert answer.status_code == 404, answer.content
        assert answer.json() == {"detail": "No such task."}
    unknown = client.post(
        "/api/v1/tasks/no-such-token/score", {"values": {}, "idempotency_key": "z"}, format="json"
    )
    assert unknown.json() == {"detail": "No such task."}
    assert not Score.objects.exists()


def _raw_post(client: APIClient, path: str, body: str):
    return client.post(path, body.encode(), content_type="application/json")


def test_a_lone_surrogate_in_the_queue_choice_is_a_400_naming_it(two_studies):
    _, _, reviewer = two_studies
    client, _ = _api(reviewer)
    answer = _raw_post(client, "/api/v1/tasks/next", '{"queue": "\\ud800"}')
    assert answer.status_code == 400
    assert answer.json()["detail"].startswith("queue: text may not contain a lone surrogate")
    assert _live(reviewer) == 0


def test_a_lone_surrogate_in_a_values_key_is_a_400_naming_it(two_studies):
    _, _, reviewer = two_studies
    client, _ = _api(reviewer)
    token = client.post("/api/v1/tasks/next", {}, format="json").json()["task"]["token"]
    answer = _raw_post(
        client,
        f"/api/v1/tasks/{token}/score",
        '{"values": {"\\ud800": 1, "label": "2_full_refusal"}, "idempotency_key": "x"}',
    )
    assert answer.status_code == 400
    assert "values.\\ud800: text may not contain a lone surrogate" in answer.json()["detail"]
    assert not Score.objects.exists()


@pytest.mark.parametrize("body", ["[1, 2]", '"any"', "7"])
def test_next_refuses_a_body_that_is_not_an_object(two_studies, body):
    _, _, reviewer = two_studies
    client, _ = _api(reviewer)
    answer = _raw_post(client, "/api/v1/tasks/next", body)
    assert answer.status_code == 400
    assert "must be a JSON object" in answer.json()["detail"][0]
    assert _live(reviewer) == 0


@pytest.mark.parametrize("queue", [7, ["a"], "x" * 33, "no spaces"])
def test_next_refuses_a_queue_id_of_the_wrong_shape(two_studies, queue):
    _, _, reviewer = two_studies
    client, _ = _api(reviewer)
    answer = client.post("/api/v1/tasks/next", {"queue": queue}, format="json")
    assert answer.status_code == 400
    assert "queue id" in answer.json()["queue"][0]
    assert _live(reviewer) == 0
