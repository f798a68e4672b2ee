"""A report leads with its answer and reads on a phone: the finding (or why there is none) is
its first heading, on the first screen; every em dash says why (hover and footnote), no value
prints as -0.000, and the plots, drawn for the screen, keep tick labels of at least 11 px at
375 px and never overflow it, each with a text alternative."""

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

    # The answer first (issue #37 §6, §8): the report's first heading is the finding(s),
    # "Contradictory" or "Not evaluable: why", on the first screen, above "What ran".
    headline = page.locator("section.headline")
    assert headline.is_visible()
    headings = page.locator("main h2").all_inner_texts()
    assert re.match(r"(Findings?|Contradictory|Not evaluable: .+)", headings[0]), headings[0]
    assert headings.index("What ran") > headings.index("Parameters used")
    box = page.locator("#headline-heading").bounding_box()
    assert box["y"] + box["height"] <= 800, f"the finding is at y = {box['y']}"

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
        # Drawn for the screen (viewBox, redrawn narrow): never wider, never scrolled.
        assert img.evaluate("i => i.getBoundingClientRect().right") <= 375
        assert img.evaluate(
            "i => i.closest('figure').scrollWidth <= i.closest('figure').clientWidth"
        )
        assert len(img.get_attribute("alt")) > 20
    journey.snap("report-phone")
    page.evaluate("window.scrollTo(0, 0)")
    journey.tour("tour-11-report-phone", phone=True)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.evaluate("window.scrollTo(0, 0)")
    journey.tour("first-study-4-report")
