"""A queue per study: a reviewer in several studies picks one by the neutral name its PI gave it
(or any), on the page and in the API; reserving only on POST; submit and next in one request."""

import pytest
from django.core.exceptions import ValidationError

from apps.raters.models import Assignment, Score, ScoringTask, StudyQueue
from apps.raters.selectors import reviewer_queues
from apps.raters.services import (
    score_submit,
    scoring_open,
    study_queue_rename,
    task_next,
)
from tests.factories import frozen_study

pytestmark = pytest.mark.django_db


def _token(study) -> str:
    return StudyQueue.objects.get(protocol=study.version.protocol).token


def test_a_reviewer_sees_each_study_by_its_given_name_only(two_studies):
    first, second, reviewer = two_studies
    queues = reviewer_queues(reviewer=reviewer)
    assert [q["name"] for q in queues] == ["Blue queue", "Green queue"]
    assert {q["queue"] for q in queues} == {_token(first), _token(second)}
    # Only the given name, the opaque id and the reviewer's own counts: nothing of the study.
    for q in queues:
        assert set(q) == {
            "queue",
            "name",
            "holding",
            "pickable",
            "current",
            "done",
            "assigned",
            "remaining",
            "hours_left",
        }


def test_next_from_a_chosen_study_serves_only_that_study(two_studies):
    first, second, reviewer = two_studies
    for _ in range(2):
        a = task_next(reviewer=reviewer, queue=_token(second))
        assert a.version_id == second.version.pk
        score_submit(
            task_token=a.task.token,
            reviewer=reviewer,
            values={"label": "2_full_refusal"},
            idempotency_key=a.task.token,
        )
    assert task_next(reviewer=reviewer, queue=_token(second)) is None
    # The other study is still there, and "any" finds it.
    assert [q["name"] for q in reviewer_queues(reviewer=reviewer)] == ["Blue queue"]
    assert task_next(reviewer=reviewer).version_id == first.version.pk


def test_an_unknown_study_choice_serves_nothing(two_studies):
    _, _, reviewer = two_studies
    assert task_next(reviewer=reviewer, queue="not-a-queue") is None
    assert not Assignment.objects.exists()


def test_the_api_takes_the_same_choice(client, two_studies):
    first, _second, reviewer = two_studies
    client.force_login(reviewer)
    listed = client.get("/api/v1/tasks/queues").json()
    assert [q["name"] for q in listed["queues"]] == ["Blue queue", "Green queue"]
    task = client.post(
        "/api/v1/tasks/next", {"queue": _token(first)}, content_type="application/json"
    ).json()["task"]
    assert ScoringTask.objects.get(token=task["token"]).version_id == first.version.pk
    assert (
        client.post(
            "/api/v1/tasks/next", {"queue": "x" * 40}, content_type="application/json"
        ).status_code
        == 400
    )


def test_the_page_keeps_the_chosen_study_across_scores(client, two_studies):
    first, second, reviewer = two_studies
    client.force_login(reviewer)
    page = client.get("/queue/").content.decode()
    assert "Blue queue" in page and "Green queue" in page and "Any study" in page
    assert first.version.protocol.code not in page and second.version.protocol.code not in page
    url = client.post("/queue/next/", {"queue": _token(second)}).url
    response = client.post(url, {"idempotency_key": "k1", "label": "2_full_refusal"})
    following = ScoringTask.objects.get(token=response.url.strip("/").split("/")[-1])
    assert following.version_id == second.version.pk


def test_a_name_that_gives_the_study_away_is_refused(two_studies):
    first, _, _ = two_studies
    protocol = first.version.protocol
    for name in (protocol.code, f"Scoring {protocol.title.upper()}", "   "):
        with pytest.raises(ValidationError) as error:
            study_queue_rename(protocol=protocol, name=name, user=first.pi)
        assert "name" in error.value.message_dict
    assert StudyQueue.objects.get(protocol=protocol).name == "Blue queue"


def test_score_with_next_answers_the_score_and_the_next_task(client, two_studies):
    first, _, reviewer = two_studies
    client.force_login(reviewer)
    token = client.post(
        "/api/v1/tasks/next", {"queue": _token(first)}, content_type="application/json"
    ).json()["task"]["token"]
    body = {
        "values": {"label": "1_full_compliance"},
        "idempotency_key": "with-next-1",
        "next": True,
        "queue": _token(first),
    }
    first_reply = client.post(f"/api/v1/tasks/{token}/score", body, content_type="application/json")
    assert first_reply.status_code == 201
    following = first_reply.json()["next"]["task"]
    assert following["token"] != token and following["state"] == "reserved"
    assert ScoringTask.objects.get(token=following["token"]).version_id == first.version.pk
    repeat = client.post(f"/api/v1/tasks/{token}/score", body, content_type="application/json")
    assert repeat.status_code == 200
    assert repeat.json()["next"]["task"]["token"] == following["token"]
    assert Score.objects.count() == 1
    assert Assignment.objects.filter(outcome="active").count() == 1


def test_at_k_1_every_response_is_scored_once_and_nothing_is_adjudicated():
    study = frozen_study(responses=6, reviewers=3, parameters={"scores_per_response": 1})
    scoring_open(version=study.version, user=study.pi)
    labels = ["1_full_compliance", "2_full_refusal"]
    n = 0
    while True:
        reviewer = study.reviewers[n % 3]
        a = task_next(reviewer=reviewer)
        if a is None:
            break
        score_submit(
            task_token=a.task.token,
            reviewer=reviewer,
            values={"label": labels[n % 2]},
            idempotency_key=f"k{n}",
        )
        n += 1
    assert n == 6
    assert sorted(Score.objects.values_list("response_id", flat=True)) == sorted(
        r.pk for r in study.responses
    )
    assert not ScoringTask.objects.filter(kind="adjudication").exists()


def test_the_pi_names_the_study_on_the_scoring_page(client, two_studies):
    first, _, _ = two_studies
    client.force_login(first.pi)
    url = f"/protocols/{first.version.protocol.code}/v/{first.version.label}/scoring/"
    assert 'value="Blue queue"' in client.get(url).content.decode()
    assert client.post(url, {"queue_name": "Set north"}).status_code == 302
    assert StudyQueue.objects.get(protocol=first.version.protocol).name == "Set north"
    refused = client.post(url, {"queue_name": first.version.protocol.code})
    assert refused.status_code == 200 and "reviewers are blind to it" in refused.content.decode()
    assert StudyQueue.objects.get(protocol=first.version.protocol).name == "Set north"
