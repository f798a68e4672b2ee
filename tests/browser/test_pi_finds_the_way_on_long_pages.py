"""Issue #37 §9, at 1280 and 375 px: the draft page and the decision table have a sticky table
of contents with each part's count and the freeze's blockers in it, and a decision-table
clause picks its estimate from the list of what the plan's pipeline produces."""

import re

import pytest

from apps.protocols.plans import pipeline_declaration
from apps.protocols.services import protocol_create
from tests.browser.conftest import DESKTOP, PHONE
from tests.factories import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _toc_stays_in_view(page) -> None:
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight * 0.6)")
    page.wait_for_timeout(100)
    box = page.locator("nav.toc").bounding_box()
    height = page.viewport_size["height"]
    assert box is not None and 0 <= box["y"] < height, f"the contents are at y = {box}"


def test_pi_finds_the_way_on_the_draft_and_the_decision_table(journey):
    make_user("lena-pi")
    from apps.accounts.models import User

    protocol = protocol_create(
        user=User.objects.get(username="lena-pi"), code="OPB-L", title="Long", template="opb"
    )
    version = protocol.versions.get()
    page = journey.page
    journey.sign_in("lena-pi")
    for size in (DESKTOP, PHONE):
        page.set_viewport_size(size)
        journey.go("/protocols/OPB-L/v/1.0/edit/")
        toc = page.locator("nav.toc")
        assert toc.is_visible()
        # The unwritten required sections are blockers, counted where they are.
        hypotheses = toc.locator("li", has=page.get_by_role("link", name="Hypotheses"))
        assert re.search(r"Hypotheses \d+ words? 1 blocker$", hypotheses.inner_text())
        assert "set" in toc.locator("li", has_text="Plan parameters").inner_text()
        journey.snap(f"draft-contents-{size['width']}")
        _toc_stays_in_view(page)
        # A contents link lands on its part.
        page.evaluate("window.scrollTo(0, 0)")
        toc.get_by_role("link", name="Decision table").click()
        page.wait_for_function("() => location.hash === '#decision-table-edit'")

    produced = {e.name for e in pipeline_declaration("opb").version_estimates(version)}
    for size in (DESKTOP, PHONE):
        page.set_viewport_size(size)
        journey.go("/protocols/OPB-L/v/1.0/decision-table/")
        estimate = page.get_by_label("Clause 1: estimate").first
        options = set(estimate.locator("option").evaluate_all("os => os.map(o => o.value)"))
        assert produced <= options and options - produced <= {""}
        toc = page.locator("nav.toc")
        assert toc.locator("li").count() == page.locator("fieldset.decision-rule").count()
        assert "clause" in toc.locator("li").first.inner_text()
        journey.snap(f"table-contents-{size['width']}")
        _toc_stays_in_view(page)
