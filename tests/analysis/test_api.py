"""The analysis API: start a run, read its state, read its result (sealed: 403)."""

import pytest
from rest_framework.test import APIClient

from apps.analysis.models import AnalysisRun, RunState
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _base(study):
    return f"/api/v1/protocols/{study.protocol.code}/versions/{study.version.label}/analysis-runs"


@pytest.fixture
def api():
    return APIClient()


def test_the_pi_starts_a_run_and_reads_its_state(api, study, django_capture_on_commit_callbacks):
    api.force_authenticate(study.pi)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(_base(study), {}, format="json")
    assert response.status_code == 201
    assert response.json()["number"] == 1 and response.json()["kind"] == "opb"
    state = api.get(f"{_base(study)}/1").json()
    assert state["state"] == RunState.SUCCEEDED and state["progress"] == 100
    run = AnalysisRun.objects.get()
    assert state["result_sha256"] == run.result_sha256 and state["sealed"] is True
    assert state["protocol_sha256"] == study.version.sha256 and state["seed"] == run.seed


@pytest.mark.parametrize(("who", "status"), [("auditor", 403), ("editor", 403), ("reviewer", 404)])
def test_only_the_pi_starts_a_run(api, study, who, status):
    api.force_authenticate(getattr(study, who) if who != "reviewer" else study.reviewers[0])
    assert api.post(_base(study), {}, format="json").status_code == status
    assert not AnalysisRun.objects.exists()


def test_a_bad_kind_is_a_400_naming_the_field(api, study):
    api.force_authenticate(study.pi)
    response = api.post(_base(study), {"kind": "tea-leaves"}, format="json")
    assert response.status_code == 400 and "kind" in response.json()


def test_the_result_is_403_while_sealed_and_the_exact_bytes_after(api, study, run_now, unseal):
    run = run_now(study.version, study.pi)
    api.force_authenticate(study.auditor)
    sealed = api.get(f"{_base(study)}/1/result")
    assert sealed.status_code == 403 and "sealed" in sealed.json()["detail"]
    unseal(study.version, study.pi)
    response = api.get(f"{_base(study)}/1/result")
    assert response.status_code == 200
    assert response.content == bytes(run.result.content)


def test_a_run_without_a_result_answers_409(api, study):
    from apps.analysis.services import analysis_run_request

    analysis_run_request(version=study.version, user=study.pi)
    api.force_authenticate(study.pi)
    response = api.get(f"{_base(study)}/1/result")
    assert response.status_code == 409 and "queued" in response.json()["detail"]


def test_reviewers_and_strangers_get_404_for_everything(api, study, run_now):
    run_now(study.version, study.pi)
    for user in (study.reviewers[0], UserFactory()):
        api.force_authenticate(user)
        for url in (f"{_base(study)}/1", f"{_base(study)}/1/result", f"{_base(study)}/2"):
            assert api.get(url).status_code == 404


def test_the_analysis_endpoints_are_in_the_openapi_schema(api, study):
    api.force_authenticate(study.pi)
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    paths = schema["paths"]
    base = "/api/v1/protocols/{code}/versions/{label}/analysis-runs"
    assert "post" in paths[base]
    assert "get" in paths[base + "/{number}"]
    assert set(paths[base + "/{number}/result"]["get"]["responses"]) >= {"200", "403", "409"}


def test_the_blob_endpoint_serves_a_result_only_once_unsealed(api, study, run_now, unseal):
    run = run_now(study.version, study.pi)
    api.force_authenticate(study.pi)
    for digest in (run.result_sha256, run.input_sha256):
        assert api.get(f"/api/v1/blob/{digest}").status_code == 404  # sealed: as if unknown
    unseal(study.version, study.pi)
    for digest, blob in ((run.result_sha256, run.result), (run.input_sha256, run.inputs)):
        response = api.get(f"/api/v1/blob/{digest}")
        assert response.status_code == 200 and response.content == bytes(blob.content)
    api.force_authenticate(study.reviewers[0])
    assert api.get(f"/api/v1/blob/{run.result_sha256}").status_code == 404


def test_another_pipeline_than_the_plans_is_refused_before_anything_is_queued(api, study):
    """Issue #12 §2: running xstest on an opb plan is refused with a plain sentence."""
    api.force_authenticate(study.pi)
    response = api.post(_base(study), {"kind": "xstest"}, format="json")
    assert response.status_code == 400
    message = " ".join(response.json()["kind"])
    assert "names the opb pipeline; only opb can be run on it, not xstest" in message
    assert not AnalysisRun.objects.exists()
