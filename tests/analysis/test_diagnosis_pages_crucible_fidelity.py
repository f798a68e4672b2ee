"""The design diagnosis page of a CRUCIBLE draft and of an injection-fidelity draft (issue #35
§4, §6): the form shows each kind's world with its help texts and sizes, a run goes through
the request service and the Celery task (eager here, on commit), and the page, its status and
its plots render the result (never a 500). The CRUCIBLE demo's own draft (15 families, 12 axes,
3 evaluands: some 250 estimates) renders too."""

import pytest
from django.urls import reverse

from apps.analysis.models import DiagnosisState
from apps.demo import fidelity as demo_fidelity
from apps.demo.crucible import crucible_draft
from tests.factories import UserFactory, crucible_shaped_draft, fidelity_shaped_draft

pytestmark = pytest.mark.django_db


def _run(client, capture, draft, code, world, **form):
    url = reverse("analysis:diagnosis", args=[code, "1.0"])
    client.force_login(draft.created_by)
    page = client.get(url)
    assert page.status_code == 200
    data = {"sims": "3", "seed": "5", "size": "", "size_values": "", **form}
    data.update({f"world__{k}": str(v) for k, v in world.items()})
    with capture(execute=True):
        answer = client.post(url, data)
    assert answer.status_code == 302, answer.content.decode()[:2000]
    diagnosis = draft.design_diagnoses.get()
    assert diagnosis.state == DiagnosisState.SUCCEEDED, diagnosis.error
    assert diagnosis.progress == 100
    shown = client.get(url)
    assert shown.status_code == 200
    status = client.get(reverse("analysis:diagnosis-status", args=[code, "1.0", diagnosis.number]))
    assert status.status_code == 200 and "Succeeded" in status.content.decode()
    svg = client.get(
        reverse("analysis:diagnosis-plot", args=[code, "1.0", diagnosis.number, 0]) + "?w=340"
    )
    assert svg.status_code == 200 and b"<svg" in svg.content
    return page.content.decode(), shown.content.decode()


def test_a_crucible_draft_is_diagnosed_through_the_page_and_the_task(
    client, django_capture_on_commit_callbacks
):
    draft = crucible_shaped_draft(code="CRU-PAGE", families=4, seeds=2, axes=("stealth",))
    before, after = _run(
        client,
        django_capture_on_commit_callbacks,
        draft,
        "CRU-PAGE",
        {"mean:E1:R1:stealth": 0.8, "family_sd": 0.05},
        size="seeds_per_family",
        size_values="1,2",
    )
    assert "Scenario-family SD" in before and "CRUCIBLE §6.1" in before
    assert "seeds per family" in before
    assert "stealth · E1 · R1" in after and "Coverage" in after and "±" in after


def test_a_fidelity_draft_is_diagnosed_through_the_page_and_the_task(
    client, django_capture_on_commit_callbacks
):
    draft = fidelity_shaped_draft(
        code="FID-PAGE", cards=list(demo_fidelity.TOPICS)[:6], evaluands=2, parameters={}
    )
    before, after = _run(
        client,
        django_capture_on_commit_callbacks,
        draft,
        "FID-PAGE",
        {"pass:sim-a:A1": 0.6, "judge_error": 0.1},
        size="cards",
        size_values="6,12",
    )
    assert "Judge error rate" in before and "Drift gate" in before
    assert "PolicyCards" in before and "dialogues per card" in before
    assert "fidelity rate · sim-a" in after and "Power" in after
    # Far below the targets' power: said in plain words.
    assert "power below 80%" in after


def test_the_crucible_demo_draft_renders_its_world_and_a_short_diagnosis(
    client, django_capture_on_commit_callbacks
):
    draft, _ = crucible_draft(user=UserFactory(), code="CRU-DEMO-PAGE")
    _, after = _run(
        client, django_capture_on_commit_callbacks, draft, "CRU-DEMO-PAGE", {}, sims="2"
    )
    assert "maximum acceptable rung · conservative · E1" in after
    assert "E1 − E3 · scope_discipline · R2 (confirmatory)" in after
