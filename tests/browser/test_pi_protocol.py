"""Journey a: a PI creates a protocol in the browser, reads the freeze checklist on the draft,
fixes what it lists, freezes, amends with a rationale and freezes again.

Written in the browser: the protocol, every section, every analysis-plan parameter (one through
autosave, the rest with "Save all"), the rubric (applied from a template) and the amendment
rationale. Set up through services between steps, because authoring them by hand is long and
has its own tests: the design's levels, items, cells and keys, and the roster of evaluands.
"""

import re

import pytest

from apps.protocols.models import Protocol
from tests.factories import design_and_roster, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SECTIONS = {
    "hypotheses": "Operative failure rises with the harm level on Family A.",
    "design": "Two levels, two items in one discrimination-control family.",
    "exclusions": "Attempts that never reach a terminal outcome are excluded.",
    "stopping_rules": "No family stops early.",
    "analysis": "Beta regression of the failure rate on the level.",
}

PARAMETERS = {
    "epsilon": "0.1",
    "interval_coverage": "0.95",
    "agreement_minimum": "0.667",
    "n_per_cell": "5",
    "n_per_surface_min": "30",
    "bootstrap_replicates": "200",
    "seed": "20261130",
    "adjudication_delta": "0.25",
    "repetitions": "5",
}

CHOICES = {
    "interval_method": "bootstrap",
    "beta_positive_criterion": "interval",
    "agreement_statistic": "krippendorff_alpha_interval",
    "absent_cell_handling": "exclude_and_report",
    "aggregation_level": "item_level",
}


def _checklist_codes(page) -> list[str]:
    return page.locator("#freeze-checklist li[data-code]").evaluate_all(
        "items => items.map(li => li.dataset.code)"
    )


def test_pi_protocol(journey):
    pi = make_user("pat-pi")
    page = journey.page
    journey.go("/login/")
    journey.snap("sign-in")
    journey.sign_in("pat-pi")

    # Create the protocol.
    journey.go("/protocols/new/")
    page.get_by_label("Code").fill("OPB-J1")
    page.get_by_label("Title").fill("Operativity under rising harm, journey study")
    page.get_by_label("Plan template").select_option("opb")
    journey.snap("new-protocol")
    page.get_by_role("button", name="Create protocol").click()
    page.wait_for_url(re.compile(r"/protocols/OPB-J1/v/1\.0/edit/$"))

    # The draft's checklist lists what blocks the freeze, and the button is disabled.
    codes = _checklist_codes(page)
    assert {"section_empty", "param_missing", "design_empty", "roster_empty"} <= set(codes)
    assert "rubric_missing" in codes
    assert page.locator("#freeze-button").is_disabled()
    journey.snap("draft-checklist")
    journey.tour("tour-1-freeze-checklist")

    # One parameter through autosave: "Saving…" shows while the request is out (held here
    # until seen, so nothing depends on timing), then the checklist refreshes without a reload.
    missing_before = codes.count("param_missing")
    held = []
    page.route("**/autosave/", lambda route: held.append(route))
    page.locator("#param-epsilon").fill("0.1")
    page.locator("#param-epsilon").blur()
    saving = page.locator("#save-status .saving")
    saving.wait_for(state="visible")
    assert "Saving…" in saving.inner_text()
    assert len(held) == 1
    held[0].continue_()
    page.unroute("**/autosave/")
    saving.wait_for(state="hidden")
    page.wait_for_function(
        "n => document.querySelectorAll('#freeze-checklist li[data-code=param_missing]').length"
        " === n",
        arg=missing_before - 1,
    )

    # The rest through the form.
    for name, text in SECTIONS.items():
        page.locator(f"#section-{name}").fill(text)
    for name, value in PARAMETERS.items():
        page.locator(f"#param-{name}").fill(value)
    for name, value in CHOICES.items():
        page.locator(f"#param-{name}").select_option(value)
    journey.settle()
    journey.click_and_wait(page.get_by_role("button", name="Save all"))
    assert sorted(set(_checklist_codes(page))) == ["design_empty", "roster_empty", "rubric_missing"]
    journey.snap("plan-written")

    # The rubric, from the checklist's own link.
    page.locator("#freeze-checklist li[data-code=rubric_missing] a").click()
    page.get_by_label("Template").select_option("opb")
    journey.click_and_wait(page.get_by_role("button", name="Apply template"))
    assert page.locator("table.list tbody tr").count() >= 3
    journey.snap("rubric")

    # The design and the roster (services: see the module docstring).
    draft = Protocol.objects.get(code="OPB-J1").versions.get(label="1.0")
    design_and_roster(draft, pi)

    journey.go("/protocols/OPB-J1/v/1.0/edit/")
    assert _checklist_codes(page) == []
    assert page.locator("#freeze-checklist").get_by_text("Nothing blocks the freeze.").is_visible()
    page.get_by_label("Type OPB-J1 to freeze").fill("OPB-J1")
    page.locator("#freeze-button").click()
    page.wait_for_url(re.compile(r"/protocols/OPB-J1/v/1\.0/$"))
    draft.refresh_from_db()
    assert draft.state == "frozen" and len(draft.sha256) == 64
    assert page.locator(".freeze-record").get_by_text(draft.sha256, exact=True).is_visible()
    journey.snap("frozen")

    # Amend: the new draft needs a rationale before it freezes.
    page.get_by_role("link", name="Amend…").click()
    page.get_by_role("button", name="Open the draft amendment").click()
    page.wait_for_url(re.compile(r"/protocols/OPB-J1/v/1\.1/edit/$"))
    assert _checklist_codes(page) == ["rationale_missing"]
    page.locator("#section-stopping_rules").fill("Family B stops at L1.")
    page.locator("#amendment-rationale").fill(
        "A pilot showed L1 prompts of Family B already change the task; stop there."
    )
    journey.snap("amendment-draft")
    journey.settle()
    journey.click_and_wait(page.get_by_role("button", name="Save all"))
    assert _checklist_codes(page) == []
    page.get_by_label("Type OPB-J1 to freeze").fill("OPB-J1")
    page.locator("#freeze-button").click()
    page.wait_for_url(re.compile(r"/protocols/OPB-J1/v/1\.1/$"))
    amended = Protocol.objects.get(code="OPB-J1").versions.get(label="1.1")
    assert amended.state == "frozen" and amended.sha256 not in ("", draft.sha256)
    record = page.locator(".freeze-record")
    assert record.get_by_text(amended.sha256, exact=True).is_visible()
    assert record.get_by_text(draft.sha256[:16]).is_visible()  # what it supersedes
    assert page.get_by_text("A pilot showed L1 prompts").is_visible()
    journey.snap("amended-frozen")
    journey.tour("tour-2-frozen-amendment")
