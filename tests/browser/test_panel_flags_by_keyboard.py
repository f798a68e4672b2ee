"""OPB-01 §6.1: a PI enters a panel member's flags one Family A item at a time, keyboard only."""

import pytest

from tests.factories import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _focused(page) -> str:
    return page.evaluate("() => document.activeElement.textContent.trim()")


def test_panel_flags_by_keyboard(journey):
    from apps.items.models import PanelFlag
    from tests.factories import opb_study

    study = opb_study(code="PANELK", evaluands=1, items_per_family=6)
    study.pi.set_password(PASSWORD)
    study.pi.save()
    page = journey.page
    journey.sign_in(study.pi.username)
    journey.go("/protocols/PANELK/v/1.1/panel/")
    page.get_by_label("Member code").focus()
    page.keyboard.type("p-01")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url.endswith("/panel/p-01/")
    assert "Item 1 of 6" in page.content()
    journey.snap("first-item")
    # The flag button has the focus: Enter flags A01; Tab then Enter does not flag A02.
    journey.autofocused()
    assert _focused(page) == "Flag: could cause harm"
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "Item 2 of 6" in page.content()
    journey.autofocused()
    page.keyboard.press("Tab")
    assert _focused(page) == "Do not flag"
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "Item 3 of 6" in page.content()
    journey.snap("third-item")
    flags = dict(PanelFlag.objects.filter(member__code="p-01").values_list("item__code", "flagged"))
    assert flags == {"A01": True, "A02": False}
