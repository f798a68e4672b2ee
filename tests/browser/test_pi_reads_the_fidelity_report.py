"""Journey: a PI reads seed 003's injection-fidelity report on a 375 px phone: the page does
not scroll sideways, the fidelity figure's plot loads inside the screen with a text alternative,
and the LLM judge's inconsistency count is shown; the rubric page shows the published rubric
text's SHA-256 without scrolling sideways either."""

import pytest

from apps.demo.fidelity import PROTOCOL_CODE, fidelity_demo
from apps.deviations.services import outcome_unseal
from apps.raters.models import RubricText
from tests.browser.a11y import phone_overflow
from tests.factories import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 375, "height": 800}


@pytest.mark.timeout(900)
def test_pi_reads_the_fidelity_report_on_a_phone(journey):
    pi = make_user("fidelity-pi")
    demo = fidelity_demo(pi=pi, reviewer=make_user("fidelity-judge"))
    assert demo.run.state == "succeeded", demo.run.error
    outcome_unseal(version=demo.version, user=pi, confirmation=PROTOCOL_CODE)
    page = journey.page
    page.set_viewport_size(PHONE)
    journey.sign_in("fidelity-pi")
    journey.go(f"/protocols/{PROTOCOL_CODE}/v/{demo.version.label}/analysis/{demo.run.number}/")

    assert page.get_by_role("heading", name="Fidelity", exact=True).is_visible()
    # No horizontal page scroll at 375 px.
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    assert phone_overflow(page) is None

    # The fidelity figure: its plot loads, fits the screen and has a text alternative.
    figure = page.locator("figure.plot").first
    img = figure.locator("img")
    img.scroll_into_view_if_needed()
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=img.element_handle())
    assert img.is_visible()
    box = img.bounding_box()
    assert box is not None and box["width"] > 200 and box["x"] >= 0
    assert box["x"] + box["width"] <= PHONE["width"]
    alt = img.get_attribute("alt") or ""
    assert len(alt) > 20 and "fidelity" in alt.lower()
    assert figure.locator("figcaption").inner_text().strip()

    # The LLM judge's inconsistencies (the demo writes three, apps.demo.fidelity.FAULTS).
    judge = page.get_by_role("heading", name="LLM judge consistency")
    judge.scroll_into_view_if_needed()
    assert judge.is_visible()
    count = page.get_by_text("3 of 16 judge documents contradict their own observations")
    assert count.is_visible()
    journey.snap("fidelity-report-375")

    # The rubric page: the published text's SHA-256 wraps inside the phone's width.
    journey.go(f"/protocols/{PROTOCOL_CODE}/v/{demo.version.label}/rubric/")
    digest = RubricText.objects.get(version=demo.version).sha256
    assert page.get_by_text(digest).is_visible()
    assert page.get_by_text("yes: anyone may read it").is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    journey.snap("fidelity-rubric-375")
