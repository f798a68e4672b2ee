"""Focus order: a person signs in with the keyboard alone, and the skip link leads past the
header to the content."""

import pytest

from tests.factories import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _focused(page) -> str:
    return page.evaluate(
        "() => { const e = document.activeElement; return e.name || e.id || e.textContent.trim(); }"
    )


def test_keyboard_sign_in(journey):
    make_user("kim-keyboard")
    page = journey.page
    journey.go("/login/")
    journey.autofocused()
    assert _focused(page) == "username"  # the form's first field has the focus
    page.keyboard.type("kim-keyboard")
    page.keyboard.press("Tab")
    assert _focused(page) == "password"
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Tab")
    assert _focused(page) == "Sign in"
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "/login/" not in page.url
    journey.snap("signed-in")

    # On every page the first stop is the skip link, and it lands on the content.
    journey.go("/protocols/")
    page.keyboard.press("Tab")
    assert _focused(page) == "Skip to content"
    page.keyboard.press("Enter")
    assert _focused(page) == "main"
    page.keyboard.press("Tab")
    assert page.evaluate("document.querySelector('main').contains(document.activeElement)")
