"""A freeze looks and feels irreversible: the disabled Freeze button looks disabled, the
checklist speaks plain words (its codes only in tooltips) and keeps its count and the button at
the top, in view at 375 px while the list scrolls; freezing asks for the protocol code typed."""

import re

import pytest

from apps.protocols.models import ProtocolVersion
from apps.protocols.services import protocol_create, version_update
from apps.raters.services import rubric_apply_template
from tests.factories import OPB_SECTIONS, OPB_VALUES, design_and_roster, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

STYLE_JS = """(sel) => { const s = getComputedStyle(document.querySelector(sel));
  return [s.backgroundColor, s.color, s.cursor]; }"""


def test_pi_freeze_looks_irreversible(journey):
    pi = make_user("pat-pi")
    protocol = protocol_create(user=pi, code="OPB-F", title="Freeze study", template="opb")
    draft = protocol.versions.get(label="1.0")
    page = journey.page
    journey.sign_in("pat-pi")

    # Many problems: plain words first, the code in a tooltip, the count and button on top.
    journey.go("/protocols/OPB-F/v/1.0/edit/")
    checklist = page.locator("#freeze-checklist")
    items = checklist.locator("li[data-code]")
    count = items.count()
    assert count > 5
    assert checklist.locator("code").count() == 0
    first = items.first
    assert first.get_attribute("title").startswith("Check: ")
    assert (
        first.evaluate("li => getComputedStyle(li, '::first-letter').textTransform") == "uppercase"
    )
    assert page.locator("#checklist-count").inner_text() == f"{count} things block the freeze."
    assert "problem(s)" not in page.content()
    button = page.locator("#freeze-button")
    assert button.is_disabled()
    disabled_style = page.evaluate(STYLE_JS, "#freeze-button")
    assert disabled_style[2] == "not-allowed"
    # The button sits above the list, not below it.
    assert button.bounding_box()["y"] < first.bounding_box()["y"]
    journey.snap("many-problems")
    journey.tour("first-study-2-checklist")

    # At 375 px the count and the button stay in view while the list scrolls past.
    page.set_viewport_size({"width": 375, "height": 700})
    last = items.last
    last.scroll_into_view_if_needed()
    box = button.bounding_box()
    assert 0 <= box["y"] < 700, f"Freeze button out of view at {box}"
    journey.snap("many-problems-phone")
    page.set_viewport_size({"width": 1280, "height": 900})

    # Ready: the button is enabled and looks it, and freezing needs the code typed.
    version_update(version=draft, user=pi, sections=OPB_SECTIONS, parameters=OPB_VALUES)
    design_and_roster(draft, pi)
    rubric_apply_template(version=draft, template="opb")
    journey.go("/protocols/OPB-F/v/1.0/edit/")
    assert button.is_enabled()
    assert page.evaluate(STYLE_JS, "#freeze-button") != disabled_style
    confirmation = page.get_by_label("Type OPB-F to freeze v1.0")
    confirmation.fill("OPB-F")
    journey.tour("first-study-3-freeze")
    confirmation.fill("opb-f")
    journey.click_and_wait(button)
    assert (
        "type the protocol code OPB-F"
        in page.locator(".messages, [role=alert], body").first.inner_text()
    )
    assert ProtocolVersion.objects.get(pk=draft.pk).state == "draft"
    journey.snap("freeze-unconfirmed")
    page.get_by_label("Type OPB-F to freeze v1.0").fill("OPB-F")
    journey.click_and_wait(page.locator("#freeze-button"))
    page.wait_for_url(re.compile(r"/protocols/OPB-F/v/1\.0/$"))
    assert ProtocolVersion.objects.get(pk=draft.pk).state == "frozen"
    journey.snap("frozen")
