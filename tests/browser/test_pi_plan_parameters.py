"""Issue #12: a PI adds a plan parameter and the plan's own exclusion reasons in the browser,
reads the pipeline's catalogue beside the draft, and sees the freeze refused by the
computability gate with its message (OPB-01 v1.0's fault: a primary measure that cannot be
computed over the primary comparison's levels).

The draft is OPB-01 v1.1 as the demo builds it (its design, harm-constancy review, roster and
rubric, through the services; other journeys write such things in the browser); everything this
issue adds is done on the page.
"""

import json

import pytest

from apps.accounts.models import Role
from apps.accounts.services import membership_grant
from apps.demo.design import demo_design_build, demo_harm_review_complete
from apps.demo.opb01 import V1_1_PARAMETERS, V1_1_SECTIONS, opb01_v1_0_draft
from apps.demo.responses import demo_roster_enroll
from apps.protocols.services import version_update
from apps.raters.services import rubric_apply_template
from tests.factories import UserFactory, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REASONS = [{"code": "harness_parse_failure", "label": "The harness could not parse the reply"}]


def _checklist(page) -> dict[str, str]:
    items = page.locator("#freeze-checklist li[data-code]")
    return {
        items.nth(i).get_attribute("data-code"): items.nth(i).inner_text()
        for i in range(items.count())
    }


def _add(journey, *, name: str, kind: str = "", value: str = "", label: str = "") -> None:
    page = journey.page
    form = page.locator("#plan-parameter-add")
    form.locator('[name="add-name"]').fill(name)
    form.locator('[name="add-kind"]').select_option(kind)
    form.locator('[name="add-label"]').fill(label)
    form.locator('[name="add-value"]').fill(value)
    journey.click_and_wait(form.get_by_role("button", name="Add parameter"))


def test_pi_plan_parameters(journey):
    pi = make_user("pia-pi")
    draft = opb01_v1_0_draft(pi=pi, code="OPB-J3")
    for _ in range(3):
        membership_grant(user=UserFactory(), protocol_id=draft.protocol_id, role=Role.REVIEWER)
    demo_design_build(draft)
    demo_harm_review_complete(draft)
    demo_roster_enroll(version=draft, user=pi)
    rubric_apply_template(version=draft, template="opb")
    version_update(version=draft, user=pi, sections=V1_1_SECTIONS, parameters=V1_1_PARAMETERS)
    page = journey.page
    journey.sign_in("pia-pi")
    journey.go("/protocols/OPB-J3/v/1.0/edit/")
    assert _checklist(page) == {}

    # The catalogue: the pipeline's estimates with their meanings, beside the draft.
    catalogue = page.locator("#plan-catalogue")
    assert catalogue.get_by_text("beta_LF", exact=True).is_visible()
    assert catalogue.get_by_text("how far Family A's gradient differs").is_visible()
    journey.snap("catalogue")

    # A wrong value is a form error naming the field; nothing is added.
    _add(journey, name="min_task_blocks", kind="integer", value="sixty-four")
    error = page.locator("#plan-parameter-add .error")
    assert "whole number" in error.first.inner_text()
    assert page.locator("#param-min_task_blocks").count() == 0
    journey.snap("parameter-refused")

    # The plan's own parameter, typed, and the plan's own exclusion reasons.
    _add(journey, name="min_task_blocks", kind="integer", value="64", label="minimum task blocks")
    assert page.locator("#param-min_task_blocks").input_value() == "64"
    _add(journey, name="exclusion_reasons", value=json.dumps(REASONS))
    assert "harness_parse_failure" in page.locator("#param-exclusion_reasons").input_value()
    assert _checklist(page) == {}
    journey.snap("parameters-added")

    # OPB-01 v1.0's primary measure: executable steps, defined on L3–L5 only.
    _add(journey, name="primary_measure", value="A_att")
    problems = _checklist(page)
    assert list(problems) == ["estimate_not_computable"]
    message = problems["estimate_not_computable"]
    assert "A_att is defined on L3–L5 only" in message
    assert "the primary comparison uses L0–L3" in message
    assert page.locator("#freeze-button").is_disabled()
    journey.snap("freeze-refused")

    draft.refresh_from_db()
    assert draft.state == "draft"
    held = dict(draft.parameters.values_list("name", "value"))
    assert held["min_task_blocks"] == "64" and held["primary_measure"] == "A_att"
