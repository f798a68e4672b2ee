"""Issue #37 §6–§7 in the browser, at 1280 and 375 px: *Run analysis* on data below the plan's
minimum asks first and says what is missing; the report then leads with "Not evaluable: why"
on the first screen; *Amend* on a version in scoring says how many tasks are open and closes
its scoring unless the PI keeps it open."""

import re

import pytest

from apps.analysis import services as analysis_services
from apps.analysis.models import AnalysisRun
from apps.deviations.services import outcome_unseal
from apps.raters.models import ScoringClosing
from apps.raters.services import scoring_open
from tests.browser.conftest import DESKTOP, PHONE
from tests.factories import PASSWORD, frozen_study, opb_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def queued(monkeypatch):
    ids: list[int] = []
    monkeypatch.setattr(analysis_services, "_enqueue", ids.append)
    return ids


def test_pi_is_asked_before_a_run_on_thin_data(journey, queued):
    study = opb_study(code="THIN-B", evaluands=1, items_per_family=2, repetitions=1)
    study.pi.set_password(PASSWORD)
    study.pi.save()
    page = journey.page
    journey.sign_in(study.pi.username)
    for size, n in ((PHONE, 1), (DESKTOP, 2)):
        page.set_viewport_size(size)
        journey.go("/protocols/THIN-B/v/1.1/analysis/")
        journey.click_and_wait(page.get_by_role("button", name="Run analysis"))
        warning = page.locator("#thin-data")
        assert warning.is_visible() and "beta_A not evaluable: 2 items" in warning.inner_text()
        assert not AnalysisRun.objects.exists()
        journey.snap(f"thin-data-{size['width']}")
        if n == 1:  # the phone backs out; the desktop goes on
            journey.click_and_wait(warning.get_by_role("link", name="Cancel"))
            assert not AnalysisRun.objects.exists()
    journey.click_and_wait(page.get_by_role("button", name="Run anyway on thin data"))
    page.wait_for_url(re.compile(r"/analysis/1/$"))
    analysis_services.analysis_run_perform(run_id=queued[0])
    outcome_unseal(version=study.version, user=study.pi, confirmation="THIN-B")

    for size in (PHONE, DESKTOP):
        page.set_viewport_size(size)
        journey.go("/protocols/THIN-B/v/1.1/analysis/1/")
        heading = page.locator("main h2").first
        assert heading.inner_text().startswith("Not evaluable: beta_A not evaluable: 2 items")
        box = heading.bounding_box()
        assert box["y"] + box["height"] <= size["height"], f"the answer is at y = {box['y']}"
        journey.snap(f"not-evaluable-{size['width']}")


def test_pi_amends_a_version_in_scoring(journey):
    study = frozen_study(responses=3)
    scoring_open(version=study.version, user=study.pi)
    study.pi.set_password(PASSWORD)
    study.pi.save()
    code, label = study.version.protocol.code, study.version.label
    page = journey.page
    journey.sign_in(study.pi.username)
    for size in (PHONE, DESKTOP):
        page.set_viewport_size(size)
        journey.go(f"/protocols/{code}/v/{label}/")
        journey.click_and_wait(page.get_by_role("link", name="Amend…"))
        assert "has 6 open scoring tasks" in page.locator("#open-tasks").inner_text()
        close = page.get_by_label(re.compile("^Close its scoring"))
        assert close.is_checked()  # the default
        assert not page.get_by_label(re.compile("^Keep its scoring open")).is_checked()
        journey.snap(f"amend-dialog-{size['width']}")
    # By keyboard: the default stands, Enter on the button opens the draft.
    page.get_by_role("button", name="Open the draft amendment").focus()
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url.endswith("/v/1.1/edit/")
    closing = ScoringClosing.objects.get(version=study.version)
    assert closing.reason == "v1.1 amends it"
