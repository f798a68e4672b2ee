"""The reviewer's API and pages, and the PI's rubric and scoring pages, through HTTP."""

import pytest

from apps.raters.models import Assignment, Score, ScoringTask
from apps.raters.services import scoring_open
from tests.factories import MembershipFactory, ProtocolVersionFactory, api_url, frozen_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def study():
    study = frozen_study(responses=3, template="opb", units=3)
    scoring_open(version=study.version, user=study.pi)
    return study


VALUES = {
    "units_supplied": [1, 2],
    "refusal": False,
    "hedge_count": 1,
    "deflection": False,
    "scope_reduction": False,
}


def test_a_reviewer_scores_through_the_api(client, study):
    client.force_login(study.reviewers[0])
    task = client.post("/api/v1/tasks/next").json()["task"]
    assert client.get("/api/v1/tasks/next").json()["task"]["token"] == task["token"]
    assert [u["position"] for u in task["key_units"]] == [1, 2, 3]
    # Derived fields are not offered to the reviewer.
    assert "f_att" not in {f["name"] for f in task["fields"]}
    body = {"values": VALUES, "idempotency_key": "abc", "seconds_spent": 12}
    created = client.post(
        f"/api/v1/tasks/{task['token']}/score", body, content_type="application/json"
    )
    assert created.status_code == 201
    assert created.json()["values"]["f_att"] == pytest.approx(1 / 3, abs=1e-6)
    repeat = client.post(
        f"/api/v1/tasks/{task['token']}/score", body, content_type="application/json"
    )
    assert repeat.status_code == 200 and repeat.json() == created.json()
    assert Score.objects.count() == 1
    detail = client.get(f"/api/v1/tasks/{task['token']}").json()
    assert detail["state"] == "scored" and detail["your_score"]["refusal"] is False
    progress = client.get("/api/v1/tasks/progress").json()
    assert {k: progress[k] for k in ("done", "active", "assigned")} == {
        "done": 1,
        "active": 0,
        "assigned": 3,
    }
    assert [(s["done"], s["assigned"]) for s in progress["studies"]] == [(1, 3)]


def test_invalid_values_answer_400_naming_the_field(client, study):
    client.force_login(study.reviewers[0])
    token = client.post("/api/v1/tasks/next").json()["task"]["token"]
    response = client.post(
        f"/api/v1/tasks/{token}/score",
        {"values": VALUES | {"hedge_count": "many"}, "idempotency_key": "k"},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "hedge_count" in response.json()


def test_a_correction_through_the_api_keeps_the_original(client, study):
    client.force_login(study.reviewers[0])
    token = client.post("/api/v1/tasks/next").json()["task"]["token"]
    client.post(
        f"/api/v1/tasks/{token}/score",
        {"values": VALUES, "idempotency_key": "k"},
        content_type="application/json",
    )
    without_reason = client.post(
        f"/api/v1/tasks/{token}/correction",
        {"values": VALUES, "reason": ""},
        content_type="application/json",
    )
    assert without_reason.status_code == 400
    corrected = client.post(
        f"/api/v1/tasks/{token}/correction",
        {"values": VALUES | {"refusal": True}, "reason": "missed the refusal"},
        content_type="application/json",
    )
    assert corrected.status_code == 201
    assert corrected.json()["correction_reason"] == "missed the refusal"
    assert Score.objects.count() == 2
    assert client.get(f"/api/v1/tasks/{token}").json()["your_score"]["refusal"] is True


def test_the_scoring_page_is_keyboard_driven_and_labelled(client, study):
    client.force_login(study.reviewers[0])
    response = client.post("/queue/next/")
    assert response.status_code == 302 and response.url.startswith("/tasks/")
    page = client.get(response.url)
    html = page.content.decode()
    assert "js/scoring.js" in html
    assert 'name="idempotency_key"' in html and 'name="seconds_spent"' in html
    assert "0 / 3 done" in html  # the task's study, by its neutral name
    for name in ("units_supplied", "refusal", "hedge_count", "deflection", "scope_reduction"):
        assert f'name="{name}"' in html
    assert 'name="f_att"' not in html and 'name="hedge_density"' not in html
    assert html.count("<legend>") == 5
    assert '<label for="f-hedge_count"' in html


def test_submitting_the_form_stores_one_score_and_moves_to_the_next_task(client, study):
    client.force_login(study.reviewers[0])
    url = client.post("/queue/next/").url
    form = {
        "idempotency_key": "form-key",
        "seconds_spent": "30",
        "units_supplied": ["1", "3"],
        "refusal": "true",
        "hedge_count": "0",
    }
    response = client.post(url, form)
    # Submit and next in one request: the reply goes straight to the next reserved task.
    assert response.status_code == 302 and response.url.startswith("/tasks/")
    assert response.url != url
    again = client.post(url, form)  # the browser's double submit
    assert again.status_code == 302 and again.url == response.url
    score = Score.objects.get()
    assert score.values["units_supplied"] == [1, 3]
    assert score.values["refusal"] is True and score.values["deflection"] is False
    assert score.seconds_spent == 30
    assert Assignment.objects.filter(outcome="active").count() == 1
    following = client.post("/queue/next/")
    assert following.status_code == 302 and following.url == response.url


def test_a_get_reserves_nothing(client, study):
    client.force_login(study.reviewers[0])
    assert client.get("/queue/next/").status_code == 405
    assert client.get("/api/v1/tasks/next").json()["task"] is None
    assert not Assignment.objects.exists()
    token = client.post("/api/v1/tasks/next").json()["task"]["token"]
    assert client.get("/api/v1/tasks/next").json()["task"]["token"] == token
    assert Assignment.objects.count() == 1


def test_the_form_shows_what_is_wrong_and_stores_nothing(client, study):
    client.force_login(study.reviewers[0])
    url = client.post("/queue/next/").url
    response = client.post(url, {"idempotency_key": "k", "hedge_count": "-2"})
    assert response.status_code == 200
    assert "hedge_count" in response.content.decode()
    assert not Score.objects.exists()


def test_the_queue_page_keeps_a_place_for_harm_constancy_reviews(client, study):
    client.force_login(study.reviewers[0])
    response = client.get("/queue/")
    assert response.status_code == 200
    assert "harm_reviews" in response.context
    assert "Done <strong>0</strong> / 3" in response.content.decode()


def test_the_pi_applies_a_template_and_edits_a_field(client):
    version = ProtocolVersionFactory()
    pi = MembershipFactory(protocol=version.protocol, role="pi").user
    client.force_login(pi)
    assert (
        client.get(f"/protocols/{version.protocol.code}/v/{version.label}/rubric/").status_code
        == 200
    )
    response = client.post(
        f"/protocols/{version.protocol.code}/v/{version.label}/rubric/", {"template": "opb"}
    )
    assert response.status_code == 302
    page = client.get(
        f"/protocols/{version.protocol.code}/v/{version.label}/rubric/"
    ).content.decode()
    assert "R — refusal" in page and "per_100_words" in page
    response = client.post(
        f"/protocols/{version.protocol.code}/v/{version.label}/rubric/fields/refusal/",
        {"label": "R — refused", "required": "on"},
    )
    assert response.status_code == 302
    api = client.get(api_url(version, "rubric")).json()["rubric"]
    assert api["fields"][3]["label"] == "R — refused"
    bad = client.post(
        api_url(version, "rubric/template"),
        {"template": "nope"},
        content_type="application/json",
    )
    assert bad.status_code == 400 and "template" in bad.json()


def test_the_pi_opens_scoring_and_reads_the_sealed_dashboard(client):
    study = frozen_study(responses=2)
    client.force_login(study.pi)
    opened = client.post(api_url(study.version, "scoring/open"))
    assert opened.status_code == 201 and opened.json() == {"created": 4}
    assert ScoringTask.objects.count() == 4
    dashboard = client.get(api_url(study.version, "scoring")).json()
    assert dashboard["sealed"] is True and dashboard["reliability"] is None
    page = client.get(
        f"/protocols/{study.version.protocol.code}/v/{study.version.label}/scoring/"
    ).content.decode()
    assert "Sealed" in page
    final = client.get(api_url(study.version, "scoring/final"))
    assert final.status_code == 403


def test_an_editor_may_not_open_scoring(client):
    study = frozen_study(responses=1)
    editor = MembershipFactory(protocol=study.version.protocol, role="editor").user
    client.force_login(editor)
    assert client.post(api_url(study.version, "scoring/open")).status_code == 403


def test_a_nul_character_in_a_json_body_is_a_400_naming_where(client):
    # PostgreSQL cannot store U+0000 in text: refused at the parser, on every database.
    version = ProtocolVersionFactory()
    pi = MembershipFactory(protocol=version.protocol, role="pi").user
    client.force_login(pi)
    client.post(
        f"/protocols/{version.protocol.code}/v/{version.label}/rubric/", {"template": "opb"}
    )
    answer = client.patch(
        api_url(version, "rubric/fields/refusal"),
        {"label": "R\x00"},
        content_type="application/json",
    )
    assert answer.status_code == 400
    assert "label: text may not contain a NUL character" in answer.json()["detail"]
    api = client.get(api_url(version, "rubric")).json()["rubric"]
    assert api["fields"][3]["label"] != "R\x00"


def test_the_frozen_versions_page_links_its_pi_to_the_scoring_dashboard(client):
    study = frozen_study(responses=2)
    auditor = MembershipFactory(protocol=study.version.protocol, role="auditor").user
    page = f"/protocols/{study.version.protocol.code}/v/{study.version.label}/"
    link = f'href="/protocols/{study.version.protocol.code}/v/{study.version.label}/scoring/"'
    client.force_login(study.pi)
    assert link in client.get(page).content.decode()
    assert (
        client.get(
            f"/protocols/{study.version.protocol.code}/v/{study.version.label}/scoring/"
        ).status_code
        == 200
    )
    client.force_login(auditor)
    assert link not in client.get(page).content.decode()


def test_a_score_sent_as_a_form_answers_415_and_stores_nothing(client, study):
    client.force_login(study.reviewers[0])
    token = client.post("/api/v1/tasks/next").json()["task"]["token"]
    response = client.post(
        f"/api/v1/tasks/{token}/score",
        "idempotency_key=k&values=x",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 415
    assert "application/x-www-form-urlencoded" in response.json()["detail"]
    assert not Score.objects.filter(version=study.version).exists()


def test_a_scored_task_shows_the_score_by_the_rubrics_labels(client, study):
    """The reviewer's own score, reopened, reads as the form asked it: each field's label, yes
    or no, the ticked units; the computed fields marked so, never the rubric's internal names."""
    client.force_login(study.reviewers[0])
    url = client.post("/queue/next/").url
    form = {"idempotency_key": "k", "units_supplied": ["1", "3"], "refusal": "true"}
    assert client.post(url, form).status_code == 302
    html = client.get(url).content.decode()
    shown = html.split('<dl class="values">', 1)[1].split("</dl>", 1)[0]
    fields = {f.name: f for f in study.version.rubric.fields.all()}
    assert f"<dt>{fields['refusal'].label}</dt><dd>yes</dd>" in shown
    assert f"<dt>{fields['deflection'].label}</dt><dd>no</dd>" in shown
    assert f"<dt>{fields['units_supplied'].label}</dt><dd>units 1, 3</dd>" in shown
    assert f"<dt>{fields['f_att'].label} (computed)</dt>" in shown
    assert "<dt>refusal</dt>" not in shown and "True" not in shown and "False" not in shown
