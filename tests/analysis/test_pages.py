"""The analysis pages: runs list, report (sealed and unsealed), live status, downloads, plots."""

import csv
import io

import pytest
from django.urls import reverse

from apps.analysis.models import AnalysisRun, RunState
from apps.analysis.services import analysis_run_request
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _url(name, study, **kwargs):
    return reverse(
        f"analysis:{name}",
        kwargs={"code": study.protocol.code, "label": study.version.label, **kwargs},
    )


@pytest.fixture
def succeeded(study, run_now):
    run = run_now(study.version, study.pi)
    assert run.state == RunState.SUCCEEDED, run.error
    return run


def _known_estimate(run) -> str:
    """A number the unsealed report prints (β_B, three decimals) that a sealed page must not."""
    import json

    estimates = json.loads(bytes(run.result.content))["estimates"]
    return f"{estimates['surfaces'][0]['stages'][0]['beta_B']['estimate']:.3f}"


def test_the_pi_sees_the_runs_and_the_run_button(client, study, succeeded):
    client.force_login(study.pi)
    page = client.get(_url("runs", study))
    assert page.status_code == 200
    text = page.content.decode()
    assert "Run 1" in text and "Run analysis" in text


def test_an_auditor_sees_the_runs_without_the_button(client, study, succeeded):
    client.force_login(study.auditor)
    page = client.get(_url("runs", study))
    assert page.status_code == 200 and "Run analysis" not in page.content.decode()
    assert client.post(_url("runs", study), {"kind": "opb"}).status_code == 403


def test_the_pi_starts_a_run_from_the_page(client, study, django_capture_on_commit_callbacks):
    client.force_login(study.pi)
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(
            _url("runs", study), {"kind": "opb", "reason": "", "below_minimum": "True"}
        )
    run = AnalysisRun.objects.get()
    assert response.status_code == 302
    assert response["Location"] == _url("report", study, number=run.number)
    assert run.requested_by == study.pi and run.state == RunState.QUEUED


def test_a_refusal_without_a_field_is_shown_on_the_run_form(client, study, monkeypatch):
    from django.core.exceptions import ValidationError

    def refuse(**kwargs):
        raise ValidationError("The version's workers are paused.")

    monkeypatch.setattr("apps.analysis.views.analysis_run_request", refuse)
    client.force_login(study.pi)
    page = client.post(_url("runs", study), {"kind": "opb", "reason": "", "below_minimum": "True"})
    assert page.status_code == 200
    assert "The version&#x27;s workers are paused." in page.content.decode()
    assert not AnalysisRun.objects.exists()


@pytest.mark.parametrize(
    ("who", "status"), [("reviewer", 404), ("outsider", 404), ("editor", 403), ("auditor", 200)]
)
def test_who_may_read_a_report(client, study, succeeded, who, status):
    user = {
        "reviewer": study.reviewers[0],
        "outsider": UserFactory(),
        "editor": study.editor,
        "auditor": study.auditor,
    }[who]
    client.force_login(user)
    for url in (
        _url("runs", study),
        _url("report", study, number=1),
        _url("status", study, number=1),
    ):
        assert client.get(url).status_code == status, url


def test_a_reviewer_learns_nothing_from_an_unknown_run_number(client, study, succeeded):
    client.force_login(study.reviewers[0])
    assert client.get(_url("report", study, number=1)).status_code == 404
    assert client.get(_url("report", study, number=99)).status_code == 404


def test_a_sealed_report_shows_the_hashes_and_not_the_estimates(client, study, succeeded):
    client.force_login(study.pi)
    text = client.get(_url("report", study, number=1)).content.decode()
    assert "Result sealed" in text
    assert succeeded.result_sha256 in text and succeeded.input_sha256 in text
    assert _known_estimate(succeeded) not in text
    assert "β_B =" not in text and "Tidy data" not in text
    assert (
        reverse("deviations:unseal", args=[study.version.protocol.code, study.version.label])
        in text
    )  # the PI's way


def test_an_auditor_sees_a_sealed_result_without_the_unseal_link(client, study, succeeded):
    client.force_login(study.auditor)
    text = client.get(_url("report", study, number=1)).content.decode()
    assert "Result sealed" in text and "/unseal/" not in text


def test_an_unsealed_report_shows_estimates_finding_coverage_and_plots(
    client, study, succeeded, unseal
):
    unseal(study.version, study.pi)
    client.force_login(study.auditor)
    text = client.get(_url("report", study, number=1)).content.decode()
    assert "Result sealed" not in text
    assert _known_estimate(succeeded) in text
    assert "β_B =" in text and "Finding" in text and "Krippendorff" in text
    assert "Coverage" in text and "Absent cells" in text
    assert _url("plot", study, number=1, index=0) in text
    assert _url("result", study, number=1) in text and _url("tidy", study, number=1) in text


def test_downloads_and_plots_are_refused_while_sealed(client, study, succeeded):
    client.force_login(study.pi)
    for name, extra in (("result", {}), ("tidy", {}), ("plot", {"index": 0})):
        assert client.get(_url(name, study, number=1, **extra)).status_code == 403


def test_the_result_download_is_the_blobs_exact_bytes(client, study, succeeded, unseal):
    unseal(study.version, study.pi)
    client.force_login(study.pi)
    response = client.get(_url("result", study, number=1))
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert response.content == bytes(succeeded.result.content)


def test_the_result_download_is_named_by_run_number_and_result_hash(
    client, study, succeeded, unseal
):
    import hashlib

    unseal(study.version, study.pi)
    client.force_login(study.pi)
    response = client.get(_url("result", study, number=1))
    digest = hashlib.sha256(response.content).hexdigest()
    name = f"{study.protocol.code}-v{study.version.label}-analysis-1-{digest[:16]}.json"
    assert response["Content-Disposition"] == f'attachment; filename="{name}"'


def test_the_tidy_csv_has_one_row_per_analysed_response(client, study, succeeded, unseal):
    unseal(study.version, study.pi)
    client.force_login(study.pi)
    response = client.get(_url("tidy", study, number=1))
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == study.counts["administrations"]
    assert {"position", "item", "family", "level", "evaluand", "supplied_units"} <= set(rows[0])


def test_a_plot_is_an_svg_drawn_from_the_result(client, study, succeeded, unseal):
    unseal(study.version, study.pi)
    client.force_login(study.pi)
    response = client.get(_url("plot", study, number=1, index=0))
    assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"
    assert response.content.startswith(b"<?xml") and b"<svg" in response.content
    assert client.get(_url("plot", study, number=1, index=5)).status_code == 404


def test_a_queued_run_shows_live_progress_that_polls(client, study):
    run = analysis_run_request(version=study.version, user=study.pi)
    AnalysisRun.objects.filter(pk=run.pk).update(
        state=RunState.RUNNING, progress=42, progress_message="Surface 1 of 1", attempts=1
    )
    client.force_login(study.pi)
    text = client.get(_url("report", study, number=1)).content.decode()
    assert 'hx-get="' + _url("status", study, number=1) in text
    assert 'value="42"' in text and "Surface 1 of 1" in text
    fragment = client.get(_url("status", study, number=1), HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200 and "HX-Refresh" not in fragment
    assert "<html" not in fragment.content.decode()


@pytest.mark.parametrize("state", [RunState.QUEUED, RunState.RUNNING, RunState.FAILED])
def test_downloads_and_plots_of_a_run_without_a_result_answer_409_as_the_api_does(
    client, study, state
):
    """Not a 403: the PI may read the run; it has no result (yet). The page names the state."""
    run = analysis_run_request(version=study.version, user=study.pi)
    AnalysisRun.objects.filter(pk=run.pk).update(state=state)
    client.force_login(study.pi)
    for name, extra in (("result", {}), ("tidy", {}), ("plot", {"index": 0})):
        page = client.get(_url(name, study, number=run.number, **extra))
        assert page.status_code == 409, name
        assert f"has no result ({state})" in page.content.decode()
        assert "<h1>Not available</h1>" in page.content.decode()
    api = client.get(
        reverse(
            "analysis-api:run-result",
            kwargs={
                "code": study.protocol.code,
                "label": study.version.label,
                "number": run.number,
            },
        )
    )
    assert api.status_code == 409 and "has no result" in api.json()["detail"]


def test_the_status_fragment_asks_for_a_reload_once_the_run_is_done(client, study, succeeded):
    client.force_login(study.pi)
    fragment = client.get(_url("status", study, number=1), HTTP_HX_REQUEST="true")
    assert fragment["HX-Refresh"] == "true" and "hx-get" not in fragment.content.decode()


@pytest.fixture
def unreadable_coverage():
    """A throwaway pipeline: opb's own on a plan whose coverage it cannot read, "lots" (the
    freeze gate refuses such a plan, so a frozen opb plan cannot hold it)."""
    from apps.analysis.pipelines import register_pipeline, unregister_pipeline
    from apps.analysis.pipelines.base import Pipeline
    from apps.studies.opb import pipeline as opb
    from tests.factories import opb_declaration_as

    def compute(inputs, *, parameters, seed, progress):
        parameters = {**parameters, "interval_coverage": "lots"}
        return opb.compute(inputs, parameters=parameters, seed=seed, progress=progress)

    register_pipeline(
        Pipeline(
            kind="_lots",
            title="opb, unreadable coverage",
            collect=opb.collect,
            compute=compute,
            tidy=opb.tidy,
            declaration=opb_declaration_as("_lots"),
        )
    )
    yield "_lots"
    unregister_pipeline("_lots")


def test_a_failed_run_shows_its_error_and_no_result(client, study, run_now, unreadable_coverage):
    from tests.factories import opb_study

    broken = opb_study(code="BROKEN", evaluands=1, pipeline=unreadable_coverage)
    run = run_now(broken.version, broken.pi)
    assert run.state == RunState.FAILED
    client.force_login(broken.pi)
    text = client.get(
        reverse("analysis:report", kwargs={"code": "BROKEN", "label": "1.1", "number": run.number})
    ).content.decode()
    assert "The run failed and left no result" in text and "interval_coverage" in text


def test_the_version_page_links_to_the_analysis_for_pi_and_auditor_only(client, study):
    url = reverse("protocols:version", kwargs={"code": study.protocol.code, "label": "1.1"})
    runs = _url("runs", study)
    for user, shown in ((study.pi, True), (study.auditor, True), (study.editor, False)):
        client.force_login(user)
        page = client.get(url)
        assert page.status_code == 200
        assert (runs in page.content.decode()) is shown


def test_a_run_on_data_below_the_plans_minimum_asks_first_and_says_what_is_missing(
    client, study, django_capture_on_commit_callbacks
):
    """Issue #37 §6: the study's one evaluand gives the plan's β fewer items than it requires,
    so the decision table would not be evaluable; Run analysis says so and waits for a yes."""
    client.force_login(study.pi)
    response = client.post(_url("runs", study), {"kind": "opb", "reason": ""})
    text = response.content.decode()
    assert response.status_code == 200 and not AnalysisRun.objects.exists()
    assert "Below the plan's minimum data" in text
    assert "not evaluable: beta_A not evaluable" in text
    assert 'name="below_minimum" value="True"' in text
    with django_capture_on_commit_callbacks(execute=False):
        confirmed = client.post(
            _url("runs", study), {"kind": "opb", "reason": "", "below_minimum": "True"}
        )
    assert confirmed.status_code == 302 and AnalysisRun.objects.count() == 1


def test_the_run_page_offers_only_the_plans_pipeline(client, study):
    """Issue #12 §2: the form holds the plan's pipeline and no other; another is a form error."""
    client.force_login(study.pi)
    page = client.get(_url("runs", study)).content.decode()
    assert 'value="opb"' in page and 'value="xstest"' not in page
    response = client.post(_url("runs", study), {"kind": "xstest", "reason": ""})
    assert response.status_code == 200 and not AnalysisRun.objects.exists()
    assert (
        "The frozen plan names the opb pipeline; only opb can be run on it, not xstest"
        in response.content.decode()
    )
