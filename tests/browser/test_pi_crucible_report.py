"""Journey: a PI reads the CRUCIBLE report — acceptance verdicts, the rung × axis chart per
evaluand (SVG, readable at 375 px), the coverage table and hard-fail counts — and downloads the
result (JSON) and the tidy episodes (CSV). The study is ``make demo-crucible``'s, built through
the real importers."""

import json

import pytest

from apps.demo.crucible import PROTOCOL_CODE, crucible_analyse, crucible_build
from apps.deviations.services import outcome_unseal
from tests.factories import make_user

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(900),
]


def test_pi_crucible_report(journey):
    pi = make_user("crucible-pi")
    build = crucible_build(user=pi)
    run = crucible_analyse(version=build.version, pi=pi)
    assert run.state == "succeeded", run.error
    outcome_unseal(version=build.version, user=pi, confirmation=PROTOCOL_CODE)
    page = journey.page
    journey.sign_in(pi.username)
    journey.go(f"/protocols/{PROTOCOL_CODE}/v/1.0/analysis/{run.number}/")

    verdicts = page.locator("#acceptance-verdicts .acceptance-verdict")
    assert verdicts.count() == 9  # 3 policies × 3 evaluands
    assert page.get_by_role("region", name="Policy conservative, evaluand E1").is_visible()
    assert page.get_by_role(
        "heading", name="Acceptance: maximum acceptable autonomy rung"
    ).is_visible()
    assert page.locator("#coverage-table tbody tr").count() == 3 * 4 * 12
    assert page.locator("#hard-fail-table tbody tr").count() == 3 * 4 * 3
    charts = page.locator("figure.crucible-plot img")
    assert charts.count() == 3
    for index in range(3):
        charts.nth(index).scroll_into_view_if_needed()
        page.wait_for_function(
            "(img) => img.complete && img.naturalWidth > 0", arg=charts.nth(index).element_handle()
        )
    journey.snap("report-desktop")

    page.set_viewport_size({"width": 375, "height": 800})
    chart = charts.first
    chart.scroll_into_view_if_needed()
    box = chart.bounding_box()
    assert box["width"] >= 250  # drawn for a phone, at its own size (text stays legible)
    # ...and redrawn for the narrow screen (templates/analysis/_plot.html), not a desktop
    # figure shrunk until its text is unreadable.
    page.wait_for_function("(img) => img.currentSrc.endsWith('?w=340')", arg=chart.element_handle())
    # A plot is never wider than the column (static/css/preregistry.css, figure.plot; it
    # scales with its viewBox): the figure never widens the page.
    frame = page.locator("figure.crucible-plot").first.bounding_box()
    assert frame["x"] >= 0 and frame["x"] + frame["width"] <= 375
    journey.snap("report-375")  # also checks: no horizontal scrolling at 375 px

    page.set_viewport_size({"width": 1280, "height": 900})
    with page.expect_download() as download:
        page.get_by_role("link", name="Result (JSON)").click()
    with open(download.value.path(), encoding="utf-8") as handle:
        document = json.load(handle)
    assert document["kind"] == "crucible"
    assert len(document["estimates"]["acceptance"]) == 9
    with page.expect_download() as download:
        page.get_by_role("link", name="Tidy data (CSV)").click()
    with open(download.value.path(), encoding="utf-8") as handle:
        header = handle.readline()
    assert header.startswith("position,evaluand,rung,family,seed")
