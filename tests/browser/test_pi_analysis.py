"""Journey c: a PI starts an analysis, watches its progress page move from queued to done without
reloading, and unseals the outcomes with the explicit confirmation.

The study (frozen, scored) is built with the analysis tests' builder. Tests run Celery eagerly,
which would finish the run inside the request that starts it, leaving nothing to watch; so here
the queue is replaced by a list and the test plays the worker, running the queued run with
``analysis_run_perform`` (what the Celery task calls) while the page polls.
"""

import re

import pytest

from apps.analysis import services as analysis_services
from apps.analysis.models import AnalysisRun
from apps.deviations.models import OutcomeUnsealing
from tests.factories import PASSWORD, opb_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def queued(monkeypatch):
    """Run ids the application enqueued, in order, instead of sending them to Celery."""
    ids: list[int] = []
    monkeypatch.setattr(analysis_services, "_enqueue", ids.append)
    return ids


def test_pi_analysis(journey, queued):
    study = opb_study(code="OPB-J3", evaluands=1)
    study.pi.set_password(PASSWORD)
    study.pi.save()
    page = journey.page
    journey.sign_in(study.pi.username)

    journey.go("/protocols/OPB-J3/v/1.1/analysis/")
    assert page.get_by_text("No analysis has been run on this version.").is_visible()
    journey.snap("runs")
    journey.click_and_wait(page.get_by_role("button", name="Run analysis"))
    # One evaluand and six items a family: below the plan's minimum, so it asks first.
    assert page.get_by_role("heading", name="Below the plan's minimum data").is_visible()
    assert not queued
    journey.snap("thin-data-confirmation")
    journey.click_and_wait(page.get_by_role("button", name="Run anyway on thin data"))
    page.wait_for_url(re.compile(r"/analysis/1/$"))
    status = page.locator("#run-status")
    assert status.locator(".badge-run-queued").is_visible()
    assert page.get_by_label("Progress").is_visible()
    journey.snap("queued")

    # The worker takes the run; the page, polling, shows it done with no reload.
    assert len(queued) == 1
    # The page's polls wait in playwright's hands while the worker writes: SQLite's in-memory
    # test database would refuse the worker's writes beside a reader. They go on afterwards.
    status_polls = re.compile(r"/analysis/1/status/$")
    page.route(status_polls, lambda route: route.continue_())
    analysis_services.analysis_run_perform(run_id=queued[0])
    page.unroute(status_polls)
    assert AnalysisRun.objects.get(pk=queued[0]).state == "succeeded"
    status.locator(".badge-run-succeeded").wait_for(timeout=10_000)
    assert page.url.endswith("/analysis/1/")
    journey.snap("done-polled")

    page.reload()
    assert page.get_by_role("heading", name="Result sealed").is_visible()
    assert page.get_by_role("link", name="Result (JSON)").count() == 0
    journey.snap("sealed")
    journey.tour("tour-4-sealed-result")

    # Unsealing asks for the protocol's code, typed exactly.
    journey.click_and_wait(page.get_by_role("link", name="Unseal outcomes…"))
    confirm = page.get_by_label("Type the protocol code to confirm")
    confirm.fill("OPB-J")
    journey.click_and_wait(page.get_by_role("button", name="Unseal outcomes"))
    assert not OutcomeUnsealing.objects.filter(version=study.version).exists()
    assert page.locator(".has-error, [role=alert]").first.is_visible()
    journey.snap("unseal-refused")
    page.get_by_label("Type the protocol code to confirm").fill("OPB-J3")
    journey.click_and_wait(page.get_by_role("button", name="Unseal outcomes"))
    assert OutcomeUnsealing.objects.filter(version=study.version).exists()
    # Unsealing lands on the latest report, which leads with its answer.
    assert page.url.endswith("/protocols/OPB-J3/v/1.1/analysis/1/")
    assert page.locator("main h2").first.inner_text().startswith("Not evaluable: ")
    assert page.get_by_role("link", name="Result (JSON)").is_visible()
    assert page.get_by_role("heading", name="Result sealed").count() == 0
    journey.snap("report")
    journey.tour("tour-5-analysis-report")
