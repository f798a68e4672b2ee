"""A report leads with its answer and reads on a phone: the finding (or why there is none)
comes first, every em dash says why (hover and footnote), no value prints as -0.000, and the
plots keep tick labels of at least 11 px at 375 px, each with a text alternative."""

import re

import pytest

from apps.analysis.models import AnalysisRun
from apps.analysis.services import analysis_run_perform, analysis_run_request
from apps.deviations.services import outcome_unseal
from tests.factories import PASSWORD, opb_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# matplotlib's text size in the SVG (9 pt = 12 px at the figure's own size).
DRAWN_TEXT_PX = 12


def test_pi_reads_a_report_on_a_phone(journey):
    study = opb_study(code="OPB-R", evaluands=1)
    study.pi.set_password(PASSWORD)
    study.pi.save()
    run = analysis_run_request(version=study.version, user=study.pi)
    analysis_run_perform(run_id=run.pk)
    assert AnalysisRun.objects.get(pk=run.pk).state == "succeeded"
    outcome_unseal(version=study.version, user=study.pi, confirmation="OPB-R")
    page = journey.page
    journey.sign_in(study.pi.username)
    page.set_viewport_size({"width": 375, "height": 800})
    journey.go(f"/protocols/OPB-R/v/{study.version.label}/analysis/{run.number}/")

    # The answer first: the Finding card comes before every other section of the report.
    headline = page.locator("section.headline")
    assert headline.is_visible()
    first_h2 = page.locator("main h2").all_inner_texts()
    assert first_h2.index("Finding") < first_h2.index("Parameters used")
    assert headline.locator("li").count() >= 1
    text = headline.inner_text()
    assert re.search(r"Not evaluable|Contradictory|No rule|\w", text)

    body = page.locator("main").inner_text()
    assert "-0.000" not in body and "−0.000" not in body
    dashes = page.locator("main .missing")
    if dashes.count():
        assert dashes.first.get_attribute("title").startswith("No value")
        assert page.locator(".missing-note").is_visible()

    plots = page.locator("figure.plot img")
    assert plots.count() >= 1
    for img in plots.all():
        img.scroll_into_view_if_needed()
        page.wait_for_function(
            "img => img.complete && img.naturalWidth > 0", arg=img.element_handle()
        )
        shown, natural = img.evaluate("i => [i.getBoundingClientRect().width, i.naturalWidth]")
        assert DRAWN_TEXT_PX * shown / natural >= 11, f"tick labels at {shown}/{natural}"
        assert len(img.get_attribute("alt")) > 20
    journey.snap("report-phone")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.evaluate("window.scrollTo(0, 0)")
    journey.tour("first-study-4-report")
