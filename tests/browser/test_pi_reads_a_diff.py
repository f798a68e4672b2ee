"""The OPB-01 demo's showcase diff (v1.0 → v1.1) on a phone: large structured parts are
summarised in a line each, their details open on request or download as JSON, and the page stays
short (it was 173,000 px tall, and Chromium spun for minutes); its tables wrap and the two
versions' amendment rationales are shown side by side, not word-diffed."""

import json
from pathlib import Path

import pytest

from apps.demo.opb01 import opb01_history_build
from apps.demo.people import demo_people_ensure
from apps.demo.study import demo_version_prepare
from tests.factories import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_pi_reads_the_demo_diff_on_a_phone(journey):
    users = demo_people_ensure()
    users["pi"].set_password(PASSWORD)
    users["pi"].save()
    opb01_history_build(
        pi=users["pi"], prepare=lambda version: demo_version_prepare(version, users=users)
    )
    page = journey.page
    journey.sign_in("pi")
    page.set_viewport_size({"width": 375, "height": 800})
    journey.go("/protocols/OPB-01/diff/?from=1.0&to=1.1")
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < 5000, f"the diff page is {height} px tall at 375 px"
    components = page.locator("section.diff-component")
    assert components.count() >= 1
    for section in components.all():
        summary = section.locator(".diff-summary li")
        assert summary.count() >= 1  # every changed part says what changed, in a line
        assert summary.first.inner_text().startswith(section.get_attribute("data-component"))
    # Every detail is closed until asked for; a long one is a download only.
    assert page.locator("details[open] pre.diff-unified").count() == 0
    details = page.locator("section.diff-component details")
    if details.count():
        details.first.locator("summary").click()
        assert details.first.locator("pre.diff-unified").is_visible()
    # The parameters' table wraps: its new-value column ends inside the screen (issue #37 §8).
    for cell in page.locator("table.diff-params tr td:last-child").all()[:20]:
        assert cell.evaluate("c => c.getBoundingClientRect().right") <= 375
    # Each version's amendment rationale is shown whole, side by side (stacked here), never as
    # one interleaved word diff.
    rationales = page.locator("#rationales")
    if rationales.count():
        assert rationales.locator("section").count() == 2
        assert rationales.locator("del, ins").count() == 0
    journey.snap("diff-phone")
    page.set_viewport_size({"width": 1280, "height": 900})
    if rationales.count():
        first, second = (s.bounding_box() for s in rationales.locator("section").all())
        assert first["y"] == second["y"] and first["x"] < second["x"]  # side by side
    journey.snap("diff-desktop")

    with page.expect_download() as download:
        page.get_by_role("link", name="Download as JSON").click()
    data = json.loads(Path(download.value.path()).read_text())
    assert data["from"]["version"] == "1.0" and data["to"]["version"] == "1.1"
    assert all("summary" in c for c in data["components"] if c["status"] == "changed")
