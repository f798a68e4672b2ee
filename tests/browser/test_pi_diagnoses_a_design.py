"""Issue #35's journey: a PI declares effect sizes on a draft, runs the design diagnosis,
watches its progress, reads power per finding, changes items per family and sees the curve,
then freezes and finds the diagnosis on the frozen version — and on a 375 px phone reads the
table and the plot without the page scrolling sideways.

Tests run Celery eagerly, which would finish a diagnosis inside the request that asks for it;
so the queue is replaced by a list and the test plays the worker
(``design_diagnosis_perform``, what the Celery task calls) while the page polls.
"""

import json
import re

import pytest

from apps.analysis.diagnosis import services as diagnosis_services
from apps.analysis.models import DesignDiagnosis
from tests.browser.conftest import PHONE
from tests.factories import PASSWORD, freeze, xstest_shaped_draft

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def queued(monkeypatch):
    ids: list[int] = []
    monkeypatch.setattr(diagnosis_services, "_enqueue", ids.append)
    return ids


def _work(page, queued, number):
    """Play the worker for diagnosis ``number`` while the page's polls wait."""
    polls = re.compile(rf"/diagnosis/{number}/status/$")
    page.route(polls, lambda route: route.continue_())
    diagnosis_services.design_diagnosis_perform(diagnosis_id=queued[-1])
    page.unroute(polls)


def test_pi_diagnoses_a_design(journey, queued):
    draft = xstest_shaped_draft(16, code="XS-DIAG-B", evaluands=1)
    pi = draft.created_by
    pi.set_password(PASSWORD)
    pi.save()
    page = journey.page
    journey.sign_in(pi.username)

    journey.go("/protocols/XS-DIAG-B/v/1.0/")
    assert page.get_by_text("No design diagnosis.").is_visible()
    journey.click_and_wait(page.get_by_role("link", name="Diagnose the design…"))
    journey.snap("world-form")

    # Declare the world: a full-refusal rate of 0.5 on safe prompts, prompts alike.
    page.get_by_label("2_full_refusal on Safe").fill("0.5")
    page.get_by_label("Item ICC").fill("0")
    page.get_by_label("Simulations").fill("8")
    journey.click_and_wait(page.get_by_role("button", name="Run the diagnosis"))
    status = page.locator("#diagnosis-status")
    assert status.locator(".badge-run-queued").is_visible()
    assert page.get_by_label("Progress").is_visible()
    journey.snap("queued")
    assert len(queued) == 1
    _work(page, queued, 1)
    # HX-Refresh reloads the page once the poll sees the diagnosis finished.
    page.locator(".diagnosis-table").wait_for(timeout=15_000)
    row = page.get_by_role("row", name=re.compile(r"2_full_refusal rate · m0 · S"))
    power_cell = row.locator("td").nth(4)  # mean, SD, bias, RMSE, power
    power = bytes(DesignDiagnosis.objects.get(pk=queued[0]).result.content)
    power = json.loads(power)["points"][0]["estimates"]["2_full_refusal rate · m0 · S"]["power"]
    assert power_cell.inner_text() == f"{power['value']:.3f} ± {power['se']:.3f}"
    assert power["value"] >= 0.5  # a rate of 0.5 against a reference of 0.05
    journey.snap("power-read")

    # The sample-size curve over items per family.
    page.get_by_label("Sample-size curve").select_option("items_per_family")
    page.get_by_label("Sizes").fill("8, 16")
    journey.click_and_wait(page.get_by_role("button", name="Run the diagnosis"))
    assert len(queued) == 2
    _work(page, queued, 2)
    page.get_by_role("heading", name="Power against items per family").wait_for(timeout=15_000)
    assert page.locator("table.diagnosis-curve tbody tr").count() == 2
    assert page.get_by_role("img", name=re.compile("power of each estimate")).count() == 1
    journey.snap("curve")
    page.set_viewport_size(PHONE)
    journey.snap("curve-phone")  # the a11y check: no sideways scrolling at 375 px
    page.set_viewport_size({"width": 1280, "height": 900})

    latest = DesignDiagnosis.objects.filter(version=draft).order_by("-number").first()
    frozen = freeze(draft, pi)
    journey.go(f"/protocols/XS-DIAG-B/v/{frozen.label}/")
    assert page.get_by_text("Frozen with this version").is_visible()
    assert page.get_by_text(latest.result_id[:16]).first.is_visible()
    journey.snap("frozen-version")
