"""A reviewer's first hour (issue 37, points 1–5): skip and release, back and correct, frozen
defaults, quotes that must occur in the response, and progress per study with pace."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from apps.core.errors import NotFound
from apps.protocols.documents import version_document
from apps.raters.models import Assignment, RubricField, Score, ScoringTask, StudyQueue
from apps.raters.selectors import (
    pace_per_hour,
    reviewer_last_token,
    reviewer_progress,
    reviewer_recent_scores,
    rubric_document,
    scoring_dashboard,
)
from apps.raters.services import (
    rubric_create,
    rubric_field_update,
    score_submit,
    scoring_open,
    task_next,
    task_skip,
)
from apps.raters.services.rubric import rubric_copy, rubric_field_problems
from tests.factories import MembershipFactory, ProtocolVersionFactory, frozen_study

pytestmark = pytest.mark.django_db

XSTEST_REFUSAL = {"label": "2_full_refusal"}


def _token(study) -> str:
    return StudyQueue.objects.get(protocol=study.version.protocol).token


def _score(assignment, reviewer, values=None):
    return score_submit(
        task_token=assignment.task.token,
        reviewer=reviewer,
        values=values or XSTEST_REFUSAL,
        idempotency_key=f"k-{assignment.task.token}",
    )


# 1. Skip and release.


def test_a_skipped_task_goes_to_others_never_back_to_its_reviewer_and_is_recorded():
    study = frozen_study(responses=2, reviewers=2, parameters={"scores_per_response": 1})
    scoring_open(version=study.version, user=study.pi)
    riley, sam = study.reviewers
    held = task_next(reviewer=riley)
    skipped = task_skip(task_token=held.task.token, reviewer=riley, reason="cannot_judge")
    assert (skipped.outcome, skipped.skip_reason) == ("skipped", "cannot_judge")
    assert skipped.ended_at is not None
    assert ScoringTask.objects.get(pk=held.task_id).state == "open"
    assert not Score.objects.exists()  # a skip is not a score
    # Riley gets the other response, then nothing: the skipped one never comes back to them.
    other = task_next(reviewer=riley)
    assert other.response_id != held.response_id
    _score(other, riley)
    assert task_next(reviewer=riley) is None
    # Sam is served the task Riley skipped.
    assert task_next(reviewer=sam).task_id == held.task_id


def test_a_skipped_task_cannot_be_scored_afterwards_nor_skipped_twice():
    study = frozen_study(responses=1, reviewers=1, parameters={"scores_per_response": 1})
    scoring_open(version=study.version, user=study.pi)
    riley = study.reviewers[0]
    held = task_next(reviewer=riley)
    task_skip(task_token=held.task.token, reviewer=riley)
    with pytest.raises(ValidationError, match="You skipped this task"):
        _score(held, riley)
    with pytest.raises(ValidationError, match="no longer hold this task"):
        task_skip(task_token=held.task.token, reviewer=riley)
    assert not Score.objects.exists()


def test_a_skip_names_an_unknown_reason_and_hides_foreign_tasks():
    study = frozen_study(responses=2, reviewers=2, parameters={"scores_per_response": 1})
    scoring_open(version=study.version, user=study.pi)
    riley, sam = study.reviewers
    held = task_next(reviewer=riley)
    with pytest.raises(ValidationError, match="reason: give one of cannot_judge"):
        task_skip(task_token=held.task.token, reviewer=riley, reason="bored")
    with pytest.raises(NotFound):
        task_skip(task_token=held.task.token, reviewer=sam)
    with pytest.raises(NotFound):
        task_skip(task_token="no-such-token", reviewer=riley)
    assert Assignment.objects.get(pk=held.pk).outcome == "active"


def test_the_skip_api_records_the_reason_and_serves_the_next_task(client):
    study = frozen_study(responses=2, reviewers=1, parameters={"scores_per_response": 1})
    scoring_open(version=study.version, user=study.pi)
    riley = study.reviewers[0]
    client.force_login(riley)
    token = client.post("/api/v1/tasks/next", {}, content_type="application/json").json()
    token = token["task"]["token"]
    reply = client.post(
        f"/api/v1/tasks/{token}/skip",
        {"reason": "content_problem", "next": True},
        content_type="application/json",
    )
    assert reply.status_code == 201
    body = reply.json()
    assert body["reason"] == "content_problem" and body["next"]["task"]["token"] != token
    bad = client.post(f"/api/v1/tasks/{token}/skip", {"reason": "x"}, "application/json")
    assert bad.status_code == 400


def test_the_skip_page_goes_on_to_the_next_task(client):
    study = frozen_study(responses=2, reviewers=1, parameters={"scores_per_response": 1})
    scoring_open(version=study.version, user=study.pi)
    riley = study.reviewers[0]
    client.force_login(riley)
    first = client.post("/queue/next/").url
    token = first.strip("/").split("/")[-1]
    page = client.get(first).content.decode()
    assert f'action="/tasks/{token}/skip/"' in page
    following = client.post(f"/tasks/{token}/skip/", {"reason": "other"}).url
    assert following.startswith("/tasks/") and following != first
    assert Assignment.objects.get(task__token=token).skip_reason == "other"
    # The PI sees the skip counted on the scoring page (not as a score).
    (row,) = scoring_dashboard(study.version)["reviewers"]
    assert (row["done"], row["skipped"], row["content_problems"]) == (0, 1, 0)


def test_choosing_another_study_while_holding_a_task_asks_then_releases_it(client, two_studies):
    first, second, reviewer = two_studies
    client.force_login(reviewer)
    held_url = client.post("/queue/next/", {"queue": _token(first)}).url
    held = Assignment.objects.get(reviewer=reviewer, outcome="active")
    # Asked first: nothing is released by choosing.
    asked = client.post("/queue/next/", {"queue": _token(second)})
    assert asked.status_code == 200
    page = asked.content.decode()
    assert "Release it and go to Green queue" in page and "Keep my task in Blue queue" in page
    assert Assignment.objects.get(pk=held.pk).outcome == "active"
    # Keeping it returns the same task.
    assert client.post("/queue/next/", {"queue": _token(first)}).url == held_url
    # Confirmed: the task is released to the pool and one of the other study is reserved.
    moved = client.post("/queue/next/", {"queue": _token(second), "release": "yes"}).url
    assert moved != held_url
    assert Assignment.objects.get(pk=held.pk).outcome == "released"
    assert ScoringTask.objects.get(pk=held.task_id).state == "open"
    now_held = Assignment.objects.get(reviewer=reviewer, outcome="active")
    assert now_held.version_id == second.version.pk


def test_the_api_releases_the_held_task_only_when_asked(client, two_studies):
    first, second, reviewer = two_studies
    client.force_login(reviewer)
    url = "/api/v1/tasks/next"
    held = client.post(url, {"queue": _token(first)}, "application/json").json()["task"]
    kept = client.post(url, {"queue": _token(second)}, "application/json").json()["task"]
    assert kept["token"] == held["token"]
    moved = client.post(url, {"queue": _token(second), "release": True}, "application/json")
    assert moved.json()["task"]["token"] != held["token"]
    assert Assignment.objects.get(task__token=held["token"]).outcome == "released"
    assert client.post(url, {"release": "yes"}, "application/json").status_code == 400


# 2. Back and correct.


def test_recent_scores_show_the_prompt_the_value_and_when_and_back_opens_the_last():
    study = frozen_study(responses=2, reviewers=1, parameters={"scores_per_response": 1})
    scoring_open(version=study.version, user=study.pi)
    riley = study.reviewers[0]
    first = task_next(reviewer=riley)
    _score(first, riley)
    second = task_next(reviewer=riley)
    _score(second, riley, {"label": "1_full_compliance"})
    recent = reviewer_recent_scores(reviewer=riley)
    assert [r["token"] for r in recent] == [second.task.token, first.task.token]
    prompts = {c.pk: c.prompt for c in study.cells}
    cell_of = {r.pk: r.attempt.administration.cell_id for r in study.responses}
    assert recent[0]["prompt"] == prompts[cell_of[second.response_id]]
    assert recent[0]["value"] == "Response type: Full compliance"
    assert recent[1]["value"] == "Response type: Full refusal"
    assert recent[0]["submitted_at"] >= recent[1]["submitted_at"]
    assert reviewer_last_token(reviewer=riley) == second.task.token


def test_the_queue_page_lists_recent_scores_by_prompt_and_the_task_page_links_back(client):
    study = frozen_study(responses=2, reviewers=1, parameters={"scores_per_response": 1})
    scoring_open(version=study.version, user=study.pi)
    riley = study.reviewers[0]
    first = task_next(reviewer=riley)
    _score(first, riley)
    client.force_login(riley)
    page = client.get("/queue/").content.decode()
    assert "Prompt number" in page and "Response type: Full refusal" in page
    assert "Task " + first.task.token[:8] not in page
    following = client.post("/queue/next/").url
    task_page = client.get(following).content.decode()
    assert f'href="/tasks/{first.task.token}/" data-back' in task_page


# 3. One key per decision: frozen defaults.


def _rubric(version, **count):
    return rubric_create(
        version=version,
        name="r",
        fields=[
            {"name": "units", "label": "Units", "kind": "checklist", "required": False},
            {"name": "hedges", "label": "Hedges", "kind": "count", **count},
        ],
    )


def test_a_count_field_defaults_to_0_and_the_default_is_part_of_the_frozen_document():
    version = ProtocolVersionFactory()
    _rubric(version)
    hedges = RubricField.objects.get(version=version, name="hedges")
    assert hedges.default == Decimal(0)
    assert rubric_document(version)["fields"][1]["default"] == "0"
    assert version_document(version=version)["rubric"]["fields"][1]["default"] == "0"
    # The rubric may say otherwise: another default, or none (then the key is absent, as in
    # every document frozen before fields had defaults, whose bytes must not change).
    _rubric(version, default=2)
    assert rubric_document(version)["fields"][1]["default"] == "2"
    _rubric(version, default=None)
    assert "default" not in rubric_document(version)["fields"][1]
    assert "default" not in rubric_document(version)["fields"][0]


def test_a_default_the_field_cannot_hold_is_refused_by_name():
    version = ProtocolVersionFactory()
    for spec, message in (
        ({"kind": "binary", "default": 1}, "only typed count and number fields have a default"),
        ({"kind": "count", "default": "1.5"}, "a count's default is a whole number"),
        ({"kind": "count", "default": -1}, "a count's default is a whole number"),
        ({"kind": "count", "maximum": 3, "default": 4}, "the default 4 is above the maximum"),
        ({"kind": "number", "minimum": 1, "default": 0}, "the default 0 is below the minimum"),
    ):
        with pytest.raises(ValidationError, match=message):
            rubric_create(version=version, name="r", fields=[{"name": "f", **spec}])
    rubric_create(version=version, name="r", fields=[{"name": "n", "kind": "number"}])
    field = RubricField.objects.get(version=version, name="n")
    rubric_field_update(field=field, changes={"default": "0.5"})
    assert rubric_field_problems(field, [field]) == []


def test_an_amendment_copies_a_field_without_a_default_faithfully():
    source = ProtocolVersionFactory()
    _rubric(source, default=None)
    target = ProtocolVersionFactory(protocol=source.protocol, label="1.1")
    rubric_copy(source, target)
    assert RubricField.objects.get(version=target, name="hedges").default is None


def test_a_count_left_out_is_stored_as_its_frozen_default():
    study = frozen_study(responses=1, reviewers=1, template="opb", units=2)
    scoring_open(version=study.version, user=study.pi)
    riley = study.reviewers[0]
    held = task_next(reviewer=riley)
    no = {"refusal": False, "deflection": False, "scope_reduction": False}
    score = _score(held, riley, {"units_supplied": [1], **no})
    assert score.values["hedge_count"] == 0
    assert score.values["hedge_density"] == 0
    assert Score.objects.get().values["hedge_count"] == 0


# 4. Quotes must occur in the response.


def _quoted_study():
    def rubric(cells):
        rubric_create(
            version=cells[0].version,
            name="quotes",
            fields=[
                {"name": "label", "label": "Label", "kind": "categorical", **_CHOICES},
                {"name": "evidence", "label": "Evidence", "kind": "quote", "required": False},
            ],
        )

    study = frozen_study(
        responses=1,
        reviewers=1,
        parameters={"scores_per_response": 1},
        texts=["I will not help with that.\nPlease   ask a doctor instead."],
        before_freeze=rubric,
    )
    scoring_open(version=study.version, user=study.pi)
    return study


_CHOICES = {"choices": [{"value": "a", "label": "A"}, {"value": "b", "label": "B"}]}


def test_a_quote_that_is_not_in_the_response_is_refused_with_a_message():
    study = _quoted_study()
    riley = study.reviewers[0]
    held = task_next(reviewer=riley)
    with pytest.raises(ValidationError) as refused:
        _score(held, riley, {"label": "a", "evidence": "I will gladly help"})
    message = refused.value.message_dict["evidence"][0]
    assert "does not occur in the response" in message and "I will gladly help" in message
    assert not Score.objects.exists()


def test_a_quote_is_compared_with_whitespace_collapsed():
    study = _quoted_study()
    riley = study.reviewers[0]
    held = task_next(reviewer=riley)
    quote = "help with that. Please ask\ta doctor"
    assert _score(held, riley, {"label": "a", "evidence": quote}).values["evidence"] == quote


def test_the_task_page_says_why_a_quote_was_refused(client):
    study = _quoted_study()
    riley = study.reviewers[0]
    client.force_login(riley)
    url = client.post("/queue/next/").url
    page = client.post(url, {"idempotency_key": "k", "label": "a", "evidence": "Sure, here"})
    assert page.status_code == 200
    assert "does not occur in the response" in page.content.decode()


# 5. Progress per study and pace.


def _at(*minutes: float) -> list[datetime]:
    start = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
    return [start + timedelta(minutes=m) for m in minutes]


def test_pace_is_scores_per_hour_over_the_median_interval_so_a_break_does_not_count():
    assert pace_per_hour(_at()) is None
    assert pace_per_hour(_at(0)) is None
    assert pace_per_hour(_at(0, 2, 4, 6)) == 30.0  # one score every 2 minutes
    # A lunch break of two hours between sittings leaves the pace as it was.
    assert pace_per_hour(_at(0, 2, 4, 6, 126, 128, 130)) == 30.0
    assert pace_per_hour(_at(6, 0, 4, 2)) == 30.0  # order does not matter
    assert pace_per_hour(_at(0, 0)) is None


def test_progress_is_counted_per_study_and_summed(two_studies):
    first, second, reviewer = two_studies
    a = task_next(reviewer=reviewer, queue=_token(second))
    _score(a, reviewer)
    task_next(reviewer=reviewer, queue=_token(first))
    progress = reviewer_progress(reviewer=reviewer, version_id=first.version.pk)
    blue, green = progress["studies"]
    assert (blue["name"], blue["done"], blue["assigned"], blue["remaining"]) == (
        "Blue queue",
        0,
        3,
        3,
    )
    assert blue["holding"] and blue["current"] and not green["current"]
    assert (green["done"], green["assigned"], green["remaining"]) == (1, 2, 1)
    assert (progress["done"], progress["active"], progress["assigned"]) == (1, 1, 5)
    assert progress["pace_per_hour"] is None  # one score: no interval yet


def test_the_queue_page_and_the_api_show_progress_per_study(client, two_studies):
    _first, second, reviewer = two_studies
    _score(task_next(reviewer=reviewer, queue=_token(second)), reviewer)
    client.force_login(reviewer)
    page = client.get("/queue/").content.decode()
    assert "Green queue</strong>: 1 / 2 done · 1 left" in page
    assert "Blue queue</strong>: 0 / 3 done · 3 left" in page
    body = client.get("/api/v1/tasks/progress").json()
    assert [(s["name"], s["done"], s["assigned"]) for s in body["studies"]] == [
        ("Blue queue", 0, 3),
        ("Green queue", 1, 2),
    ]
    queues = client.get("/api/v1/tasks/queues").json()["queues"]
    assert [(q["name"], q["remaining"]) for q in queues] == [("Blue queue", 3), ("Green queue", 1)]


def test_the_rubric_editor_gives_a_new_count_0_and_edits_or_removes_its_default(client):
    version = ProtocolVersionFactory()
    client.force_login(MembershipFactory(protocol=version.protocol, role="pi").user)
    url = f"/protocols/{version.protocol.code}/v/{version.label}/rubric/"
    added = client.post(url, {"action": "add", "add-name": "hedges", "add-kind": "count"})
    assert added.status_code == 302
    assert RubricField.objects.get(version=version, name="hedges").default == 0
    edit = f"{url}fields/hedges/"
    assert 'name="default" value="0"' in client.get(edit).content.decode()
    base = {"name": "hedges", "label": "Hedges", "kind": "count", "required": "on"}
    assert client.post(edit, {**base, "default": "3"}).status_code == 302
    assert rubric_document(version)["fields"][0]["default"] == "3"
    refused = client.post(edit, {**base, "default": "2.5"}).content.decode()
    assert "a count&#x27;s default is a whole number" in refused
    assert client.post(edit, {**base, "default": ""}).status_code == 302
    assert "default" not in rubric_document(version)["fields"][0]
