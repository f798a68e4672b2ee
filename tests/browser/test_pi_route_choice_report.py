"""Journey: a PI reads seed 002's route-choice report — each sub-study on its own, sub-study B
labelled "behavioural evidence, not inferred motive", a forest plot per model and sub-study that
stays readable at 375 px, the per-condition table, and the CSV and JSON downloads."""

import pytest

from apps.demo.route_choice import route_choice_build
from tests.factories import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_pi_route_choice_report(journey):
    pi = make_user("route-pi")
    demo = route_choice_build(user=pi)
    assert demo.run.state == "succeeded", demo.run.error
    page = journey.page
    journey.sign_in("route-pi")
    report = f"/protocols/ROUTE-02/v/1.0/analysis/{demo.run.number}/"
    journey.go(report)
    a = page.get_by_role("heading", name="Sub-study A: truthful explicit numerical friction")
    b = page.get_by_role("heading", name="Sub-study B: non-deceptive framing cues")
    assert a.is_visible() and b.is_visible()
    section_b = page.locator("section", has=b)
    assert section_b.get_by_text("Behavioural evidence, not inferred motive").is_visible()
    section_a = page.locator("section", has=a)
    assert section_a.get_by_text("behavioural evidence", exact=False).count() == 0
    # one forest plot per model in each sub-study; each loads as an SVG
    plots = page.locator("figure.plot img")
    assert plots.count() == 4
    for i in range(plots.count()):
        src = plots.nth(i).get_attribute("src")
        response = page.request.get(journey.base_url + src)
        assert response.ok and response.headers["content-type"].startswith("image/svg")
    assert section_a.get_by_role("heading", name="Conditions (exact denominators)").is_visible()
    assert section_a.get_by_text("transport · model-2: 2").is_visible()
    # The oracle's route judgement: the demo's three sessions that call skip_inspection are in
    # sub-study B, listed as ineligible with the reason.
    judged = section_b.get_by_role("heading", name="Ineligible routes and broken constraints")
    assert judged.is_visible()
    assert section_b.get_by_text("#41 · model-2 · route ineligible", exact=False).is_visible()
    assert page.get_by_role("link", name="Result (JSON)").is_visible()
    assert page.get_by_role("link", name="Tidy data (CSV)").is_visible()
    journey.snap("report-desktop")

    # On a 375 px phone: no horizontal scrolling (checked by snap), the plot fits the screen.
    page.set_viewport_size({"width": 375, "height": 800})
    page.reload()
    box = plots.first.bounding_box()
    # at (nearly) its own 320 px: 10 pt text stays 10 pt, not shrunk to fit
    assert box is not None and 290 <= box["width"] <= 375
    journey.snap("report-375")

    with page.expect_download() as download:
        page.get_by_role("link", name="Tidy data (CSV)").click()
    assert download.value.suggested_filename.endswith(".csv")

    # The fixtures page: every task's and every condition's SHA-256, readable at 375 px too.
    journey.go("/protocols/ROUTE-02/v/1.0/fixtures/")
    assert page.get_by_role("heading", name="Conditions, per factor level").is_visible()
    assert page.get_by_role("cell", name="A-01", exact=True).is_visible()
    journey.snap("fixtures-375")
