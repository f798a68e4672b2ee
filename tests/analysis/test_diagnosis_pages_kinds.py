"""The diagnosis page of a route-choice and a comparison draft (issue #35 §6): the world's
fields with their help texts, a run queued and read back, and a decision endpoint the world
cannot simulate said in plain words; never a 500."""

import pytest
from django.urls import reverse

from apps.analysis.models import DiagnosisState
from tests.factories import UserFactory, comparison_draft

pytestmark = pytest.mark.django_db


def _run(client, url, world, capture, **extra):
    data = {"sims": "2", "seed": "3", "size": "", "size_values": ""}
    data.update({f"world__{k}": str(v) for k, v in world.items()})
    data.update(extra)
    with capture(execute=True):
        return client.post(url, data)


def test_a_comparison_draft_declares_runs_and_reads_its_diagnosis(
    client, django_capture_on_commit_callbacks
):
    draft = comparison_draft(code="CMP-PAGE", items_per_condition=12, evaluands=("alpha",))
    client.force_login(draft.created_by)
    url = reverse("analysis:diagnosis", args=["CMP-PAGE", "1.0"])
    page = client.get(url)
    assert page.status_code == 200
    text = page.content.decode()
    assert "Item ICC" in text and "Scorer accuracy" in text and "verdict = refused" in text
    answer = _run(
        client,
        url,
        {"rate:verdict=refused:warned": 0.6, "item_icc": 0.05},
        django_capture_on_commit_callbacks,
        size="items_per_condition",
        size_values="10, 20",
    )
    assert answer.status_code == 302
    diagnosis = draft.design_diagnoses.get()
    assert diagnosis.state == DiagnosisState.SUCCEEDED, diagnosis.error
    page = client.get(url)
    assert page.status_code == 200
    assert "difference verdict=refused: warned vs plain" in page.content.decode()
    svg = client.get(
        reverse("analysis:diagnosis-plot", args=["CMP-PAGE", "1.0", diagnosis.number, 0])
    )
    assert svg.status_code == 200 and b"<svg" in svg.content


def test_a_route_choice_draft_declares_runs_and_reads_its_diagnosis(
    client, django_capture_on_commit_callbacks
):
    from apps.demo.route_choice import route_choice_draft

    pi = UserFactory()
    draft = route_choice_draft(
        user=pi,
        code="RC-PAGE",
        parameters={
            "repetitions": "16",
            "min_task_blocks": "16",
            "bootstrap_replicates": "200",
            "endpoints": '["alternate_route"]',
            "secondary_endpoints": "[]",
        },
    )
    client.force_login(pi)
    url = reverse("analysis:diagnosis", args=["RC-PAGE", "1.0"])
    text = client.get(url).content.decode()
    assert "Task-block SD" in text and "A_friction (alternate_route)" in text
    answer = _run(
        client,
        url,
        {"effect:A:friction": 0.5},
        django_capture_on_commit_callbacks,
        size="rounds",
        size_values="2, 3",
    )
    assert answer.status_code == 302
    diagnosis = draft.design_diagnoses.get()
    assert diagnosis.state == DiagnosisState.SUCCEEDED, diagnosis.error
    page = client.get(url)
    assert page.status_code == 200 and "A_friction · model-1" in page.content.decode()


def test_a_decision_endpoint_it_cannot_simulate_is_said_not_a_500(client):
    from apps.demo.route_choice import route_choice_draft

    pi = UserFactory()
    route_choice_draft(
        user=pi,
        code="RC-NOPAGE",
        parameters={
            "repetitions": "16",
            "min_task_blocks": "16",
            "decision_endpoint": "authorised_route",
        },
    )
    client.force_login(pi)
    page = client.get(reverse("analysis:diagnosis", args=["RC-NOPAGE", "1.0"]))
    assert page.status_code == 200
    assert "the design diagnosis simulates a decision endpoint" in page.content.decode()
