"""In a real browser: the PI types into the draft, autosave confirms, the preview and the freeze
checklist follow as they type, and the Freeze button unlocks once nothing blocks it."""

import os

import pytest

from apps.protocols.models import ProtocolVersion
from apps.protocols.services import version_update
from tests.conftest import chromium_path
from tests.factories import OPB_SECTIONS, OPB_VALUES, MembershipFactory

# Playwright's sync API runs an event loop in this thread. The ORM is only used outside the
# `with sync_playwright()` block: inside it, Django would open (and leave open) a second
# connection under Playwright's context.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _pi_on_the_draft(playwright, live_server, pi, *, width: int, timeout: int):
    """A browser signed in as ``pi`` on the draft's edit page: ``(browser, page)``."""
    browser = playwright.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_default_timeout(timeout)
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", pi.username)
    page.fill("#id_password", "pass-for-tests")
    page.click("main button[type=submit]")
    page.goto(f"{live_server.url}/protocols/OPB-T/v/1.0/edit/")
    return browser, page


def test_the_pi_types_the_margin_and_the_freeze_unlocks(live_server, protocol, draft):
    from playwright.sync_api import sync_playwright

    pi = MembershipFactory(protocol=protocol, role="pi").user
    values = {k: v for k, v in OPB_VALUES.items() if k != "epsilon"}
    version_update(version=draft, user=pi, sections=OPB_SECTIONS, parameters=values)

    with sync_playwright() as playwright:
        browser, page = _pi_on_the_draft(playwright, live_server, pi, width=375, timeout=10_000)

        checklist = page.locator("#freeze-checklist")
        assert "the equivalence margin ε has no value" in checklist.inner_text().lower()
        assert page.locator("#freeze-button").is_disabled()

        page.fill("#section-hypotheses", "**Rising** F_att")
        page.locator("#save-status").filter(has_text="Saved at").wait_for()
        page.locator("#preview-hypotheses strong").filter(has_text="Rising").wait_for()

        page.locator("#param-epsilon").press_sequentially("0,1")
        page.locator("#save-status").filter(has_text="Not saved").wait_for()
        assert "plain decimal" in page.locator("#error-param-epsilon").inner_text()

        page.fill("#param-epsilon", "0.1")
        page.locator("#freeze-checklist").filter(has_text="Nothing blocks the freeze.").wait_for()
        assert page.locator("#freeze-button").is_enabled()

        # Let the last autosave land first: leaving the ε field fires its `change` autosave, and
        # its answer re-renders the checklist (with an empty confirmation box) in place.
        page.evaluate("() => document.activeElement && document.activeElement.blur()")
        page.wait_for_timeout(900)
        page.wait_for_function("() => !document.querySelector('.htmx-request')")
        page.fill("#freeze-confirmation", "OPB-T")
        page.click("#freeze-button")
        # The freeze runs the computability gate (a synthetic analysis) before it answers: seconds
        # on a loaded two-core machine, so wait for the page longer than playwright's default.
        page.wait_for_url("**/protocols/OPB-T/v/1.0/", timeout=60_000)
        html = page.content()
        browser.close()

    frozen = ProtocolVersion.objects.get(pk=draft.pk)
    assert frozen.state == "frozen"
    assert frozen.parameters.get(name="epsilon").value == "0.1"
    assert frozen.hypotheses == "**Rising** F_att"
    assert frozen.sha256 in html


def test_edits_to_several_fields_while_a_save_is_in_flight_are_all_saved(
    live_server, protocol, draft
):
    """Each field autosaves its own value alone, so a save dropped from the queue is an edit
    lost. A PI on a slow link tabs through four parameters while each save takes a second to
    answer: all four reach the draft, and the status says "Saving…" until the last has.
    (With hx-sync "queue last", two of the four were lost.)"""
    from playwright.sync_api import sync_playwright

    pi = MembershipFactory(protocol=protocol, role="pi").user
    version_update(version=draft, user=pi, sections=OPB_SECTIONS, parameters=OPB_VALUES)
    typed = {
        "n_per_cell": "7",
        "n_per_surface_min": "31",
        "bootstrap_replicates": "2500",
        "agreement_minimum": "0.7",
    }

    with sync_playwright() as playwright:
        browser, page = _pi_on_the_draft(playwright, live_server, pi, width=1280, timeout=20_000)

        sent: list[str] = []
        page.on(
            "request",
            lambda request: "/autosave/" in request.url and sent.append(request.post_data or ""),
        )
        # A second of latency on every request from here on, as Chromium's throttling gives it.
        cdp = page.context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send(
            "Network.emulateNetworkConditions",
            {"offline": False, "latency": 1_000, "downloadThroughput": -1, "uploadThroughput": -1},
        )
        for name, value in typed.items():
            field = page.locator(f"#param-{name}")
            field.fill("")
            field.press_sequentially(value, delay=60)
            field.press("Tab")
        # Saves are still queued behind the one in flight: the status must not say "Saved".
        assert page.locator("#save-status .saving").is_visible()
        assert not page.locator("#save-status .saved").is_visible()
        page.wait_for_timeout(900)  # the last field's typing delay (800 ms) runs out
        page.locator("form.edit-form[data-pending-saves='0']").wait_for(timeout=30_000)
        page.locator("#save-status").filter(has_text="Saved at").wait_for()
        browser.close()

    saved = {p.name: p.value for p in ProtocolVersion.objects.get(pk=draft.pk).parameters.all()}
    assert {name: saved[name] for name in typed} == typed, sent
