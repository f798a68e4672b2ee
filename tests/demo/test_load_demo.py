"""``load_demo``: the study it leaves behind, its idempotence, and the pages the demo people see.

The demo is loaded once for the session, as ``load_demo`` loads it (``demo_database``,
tests/states.py), and this module reads its own copy; the second load goes through the
management command, as ``make run`` does. That load's on-commit callbacks are run by hand (eager
Celery): the test's transaction never commits.
"""

import pytest
from django.core.management import call_command
from django.urls import reverse

from apps.accounts.models import Membership, User
from apps.analysis.models import AnalysisRun, RunState
from apps.demo.people import DEMO_PEOPLE
from apps.demo.responses import DEMO_REPETITIONS, demo_response_for
from apps.demo.scoring import DEMO_SCORED_RESPONSES, demo_values_for
from apps.deviations.models import LogCheckpoint, LogEntry, OutcomeUnsealing
from apps.protocols.models import Protocol, ProtocolVersion, VersionState
from apps.raters.models import Assignment, Score, ScoringTask, TaskKind, TaskState
from apps.responses.models import Administration, Attempt, ResponseImport, TerminalOutcome
from apps.responses.models import Response as StudyResponse

pytestmark = pytest.mark.django_db

PASSWORDS = {person.username: person.password for person in DEMO_PEOPLE}
COUNTED = (
    User,
    Membership,
    Protocol,
    ProtocolVersion,
    Administration,
    ResponseImport,
    Attempt,
    StudyResponse,
    ScoringTask,
    Assignment,
    Score,
    AnalysisRun,
    OutcomeUnsealing,
    LogEntry,
)


def _load(capture) -> str:
    with capture(execute=True):
        call_command("load_demo", stdout=(out := _Out()))
    return out.text


class _Out:
    def __init__(self):
        self.text = ""

    def write(self, text):
        self.text += text

    def flush(self):
        pass


def _counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in COUNTED}


def _frozen() -> ProtocolVersion:
    return ProtocolVersion.objects.get(protocol__code="OPB-01", label="1.1")


def test_load_demo_leaves_a_frozen_scored_analysed_study_and_a_second_load_changes_nothing(
    demo_database, django_capture_on_commit_callbacks
):
    version = _frozen()
    assert version.state == VersionState.FROZEN
    # DEMO-OPB stays a draft and OPB-01 keeps v1.0 (refused at the gate, never frozen).
    assert Protocol.objects.get(code="DEMO-OPB").versions.get().state == VersionState.DRAFT
    assert version.protocol.versions.get(label="1.0").state != VersionState.FROZEN

    # Responses: one attempt per administration of repetitions 1–2, all through one import.
    planned = Administration.objects.filter(version=version, repetition__in=DEMO_REPETITIONS)
    attempts = Attempt.objects.filter(version=version)
    assert attempts.count() == planned.count() > 0
    assert ResponseImport.objects.filter(version=version).count() == 1
    losses = attempts.filter(terminal_outcome=TerminalOutcome.PLATFORM_LOSS).count()
    responses = StudyResponse.objects.filter(version=version)
    assert responses.count() == planned.count() - losses
    assert not Attempt.objects.filter(version=version, administration__repetition=3).exists()

    # Scores: DEMO_SCORED_RESPONSES responses in full, by reviewer1 and reviewer2 alone.
    scores = Score.objects.filter(version=version)
    assert scores.count() == 2 * DEMO_SCORED_RESPONSES
    assert set(scores.values_list("reviewer__username", flat=True)) == {"reviewer1", "reviewer2"}
    assert scores.values("response").distinct().count() == DEMO_SCORED_RESPONSES
    tasks = ScoringTask.objects.filter(version=version)
    open_primary = tasks.filter(kind=TaskKind.PRIMARY, state=TaskState.OPEN).count()
    assert open_primary == 2 * (responses.count() - DEMO_SCORED_RESPONSES)
    # Their seeded misreadings disagree now and then: adjudication waits for someone else.
    assert tasks.filter(kind=TaskKind.ADJUDICATION, state=TaskState.OPEN).exists()
    assert not Assignment.objects.filter(outcome="active").exists()

    # One analysis run, succeeded, over the scored part; outcomes unsealed.
    run = AnalysisRun.objects.get(version=version)
    assert run.state == RunState.SUCCEEDED, run.error
    assert OutcomeUnsealing.objects.filter(version=version).exists()
    # Issue #17: v1.0 deposited; the report has the panel, the three-way contrast, the surfaces'
    # fresh-session records, and rule 8.5 evaluated or "not evaluable: N items, …".
    assert version.protocol.versions.get(label="1.0").is_deposited
    import json

    estimates = json.loads(bytes(run.result.content))["estimates"]
    assert [s["evaluand"] for s in estimates["panel_baseline"]["surfaces"]]
    assert estimates["panel_baseline"]["surfaces"][0]["panel_members"] == 3
    for surface in estimates["surfaces"]:
        assert surface["fresh_session"]["fresh_session"] in ("yes", "unknown")
        stages = {s["stage"]: s for s in surface["stages"]}
        # Eight base items under C_SPXI and C₀: every contrast pairs at least the six the plan
        # requires and has its interval, on both surfaces.
        for contrast in stages["disclosure"]["three_way"]["contrasts"]:
            assert contrast["n_pairs"] >= 6, (surface["evaluand"], contrast)
            assert contrast["interval"] is not None, (surface["evaluand"], contrast)
        decision = stages["decision"]
        # Issue #32 §1: the demo's disputed responses await adjudication, so no finding is drawn
        # until they are adjudicated; the estimates rule 8.5 (the force arm) and the disclosure
        # rules 8.6–8.8 read are all there, with their intervals.
        assert decision["evaluated"] is False and decision["adjudication_pending"] is True
        assert "await adjudication" in decision["note"]
        assert decision["estimates"]["beta_force"]["interval"] is not None, surface["evaluand"]
    reliability = estimates["reliability"]
    assert reliability["awaiting_adjudication"] == estimates["counts"]["awaiting_adjudication"] > 0

    # Each demo log carries a signed checkpoint as loaded (make run starts no beat), covering
    # OPB-01 v1.1's freeze: the auditor's and the public's offline proofs need one.
    freeze = LogEntry.objects.filter(protocol=version.protocol, kind="amendment").get()
    for code in ("DEMO-OPB", "OPB-01"):
        signed = LogCheckpoint.objects.filter(protocol__code=code).order_by("-seq").first()
        assert signed is not None, code
    assert signed.seq >= freeze.seq

    before = _counts()
    output = _load(django_capture_on_commit_callbacks)
    assert _counts() == before
    for person in DEMO_PEOPLE:
        assert f"{person.username:<10} {person.password}" in output


def _sign_in(client, username: str) -> bool:
    # Through the sign-in form, as a person does: django-axes needs the request.
    answer = client.post("/login/", {"username": username, "password": PASSWORDS[username]})
    return answer.status_code == 302


def test_the_demo_people_see_their_pages(demo_database, client):
    version = _frozen()
    run = AnalysisRun.objects.get(version=version)
    opb = {"code": "OPB-01", "label": "1.1"}
    draft_label = Protocol.objects.get(code="DEMO-OPB").versions.get().label

    assert _sign_in(client, "pi")
    for url in (
        reverse("protocols:list"),
        reverse("protocols:detail", kwargs={"code": "OPB-01"}),
        reverse("protocols:version", kwargs=opb),
        reverse("protocols:version", kwargs={"code": "DEMO-OPB", "label": draft_label}),
        reverse("responses:responses", kwargs=opb),
        reverse("responses:attempts", kwargs=opb),
        reverse("analysis:runs", kwargs=opb),
    ):
        assert client.get(url).status_code == 200, url
    draft = client.get(
        reverse("protocols:version", kwargs={"code": "DEMO-OPB", "label": draft_label})
    )
    # The draft's freeze checklist: the open harm-constancy review blocks the freeze.
    assert "This is a draft" in draft.content.decode()
    assert '<ul class="checklist"><li data-code=' in draft.content.decode()
    report = client.get(reverse("analysis:report", kwargs={**opb, "number": run.number}))
    assert report.status_code == 200
    page = report.content.decode()
    assert "Result sealed" not in page
    assert "Reliability of F_att" in page and "Evaluand surface-a" in page
    # Issue #17: the demo's report shows the three-way contrast, with intervals, and the panel.
    assert page.count("Three-way contrast (OPB-01 §5)") == 2  # one per surface
    assert "Human overgeneralisation baseline (OPB-01 §6.1)" in page
    assert "Fresh session guaranteed (OPB-01 §6.3)" in page
    client.logout()

    assert _sign_in(client, "reviewer1")
    assert client.get(reverse("raters:queue")).status_code == 200
    task_page = client.post(reverse("raters:queue-next"), follow=True)
    assert task_page.status_code == 200
    assert task_page.redirect_chain[-1][0].startswith("/tasks/")
    held = Assignment.objects.get(reviewer__username="reviewer1", outcome="active")
    assert held.task.kind == TaskKind.PRIMARY and held.version_id == version.pk
    assert held.task.response.text in task_page.content.decode().replace("&#x27;", "'")
    client.logout()

    # reviewer3 scored nothing: the disagreements are theirs to adjudicate.
    assert _sign_in(client, "reviewer3")
    client.post(reverse("raters:queue-next"))
    held = Assignment.objects.get(reviewer__username="reviewer3", outcome="active")
    assert held.task.kind == TaskKind.ADJUDICATION
    client.logout()

    assert _sign_in(client, "auditor")
    assert client.get(reverse("deviations:index")).status_code == 200
    log = client.get(reverse("deviations:log", kwargs={"code": "OPB-01"}))
    assert log.status_code == 200
    assert "demo-responses-rep1-2.csv" in log.content.decode()


def test_the_synthetic_answers_are_fixed_by_the_seed_and_read_back_by_the_reviewers():
    units = ["A heading for version 1.4.0", "Added: line_count", "Fixed: word_count"]
    answers = [
        demo_response_for(
            position=p, family="A", level=5, surface="surface-a", sham=False, units=units
        )
        for p in range(1, 60)
    ]
    again = [
        demo_response_for(
            position=p, family="A", level=5, surface="surface-a", sham=False, units=units
        )
        for p in range(1, 60)
    ]
    assert answers == again
    completed = [text for outcome, text in answers if outcome == "completed"]
    assert len(set(completed)) > 1
    for text in completed:
        listed = [n for n, unit in enumerate(units, start=1) if f"- {unit}" in text]
        values = demo_values_for(text=text, units=units, position=10_000, reviewer="reviewer2")
        # A misreading can only miss a listed unit, never tick one the answer lacks.
        assert set(values["units_supplied"]) <= set(listed)
        assert len(values["units_supplied"]) >= len(listed) - 1
        assert set(values) == {
            "units_supplied",
            "refusal",
            "hedge_count",
            "deflection",
            "scope_reduction",
        }
