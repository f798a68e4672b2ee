"""Issue #21: a PI builds a rubric field by field in the browser — adds fields, watches the
preview of the reviewer's page follow what is typed (htmx, no page load), reorders a field and
removes one — and the page passes the accessibility checks (labels, contrast, 375 px)."""

import pytest

from apps.protocols.services import protocol_create
from tests.factories import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _preview(page) -> list[str]:
    value = page.locator("#rubric-preview .preview-fields").get_attribute("data-fields") or ""
    return [name for name in value.split(",") if name]


def _add(journey, *, name: str, kind: str, label: str = "", choices: str = "") -> None:
    page = journey.page
    form = page.locator("#add-field-form")
    form.locator('[name="add-name"]').fill(name)
    form.locator('[name="add-label"]').fill(label or name)
    form.locator('[name="add-kind"]').select_option(kind)
    if choices:
        form.locator('[name="add-choices"]').fill(choices)
    journey.click_and_wait(form.get_by_role("button", name="Add the field"))


def test_pi_edits_a_rubric(journey):
    pi = make_user("rubric-pi")
    protocol_create(code="RUB-1", title="Rubric journey", user=pi)
    page = journey.page
    journey.sign_in("rubric-pi")
    journey.go("/protocols/RUB-1/v/1.0/rubric/")
    assert page.locator("#rubric-preview").get_by_text("No field a reviewer types yet").count()

    _add(journey, name="refusal", kind="binary", label="Did the reply refuse?")
    _add(journey, name="hedges", kind="count", label="Hedges")
    assert _preview(page) == ["refusal", "hedges"]

    # Typing a new field shows it in the preview before it is saved.
    form = page.locator("#add-field-form")
    form.locator('[name="add-name"]').fill("tone")
    form.locator('[name="add-kind"]').select_option("categorical")
    form.locator('[name="add-choices"]').fill("calm|Calm\nhot|Hostile")
    # (A locator wait: the CSP forbids the string evaluation wait_for_function would use.)
    page.locator('#rubric-preview .preview-fields[data-fields="refusal,hedges,tone"]').wait_for(
        timeout=10_000
    )
    page.locator("#rubric-preview").get_by_text("Hostile").wait_for(timeout=10_000)
    journey.click_and_wait(form.get_by_role("button", name="Add the field"))
    assert _preview(page) == ["refusal", "hedges", "tone"]
    journey.snap("rubric-editor")
    journey.tour("first-study-rubric-editor")
    journey.check_accessibility()

    # Reorder: tone up, past hedges.
    journey.click_and_wait(page.get_by_role("button", name="Move tone up"))
    assert _preview(page) == ["refusal", "tone", "hedges"]
    # Remove hedges.
    journey.click_and_wait(page.get_by_role("button", name="Remove hedges"))
    assert _preview(page) == ["refusal", "tone"]
    assert page.locator("table.list tbody tr").count() == 2

    # A refused field is named, and the form keeps what was typed.
    _add(journey, name="verdict", kind="ordinal", choices="one|One")
    assert page.get_by_text("field 'verdict': a ordinal field needs at least two choices").count()
    assert page.locator('[name="add-name"]').input_value() == "verdict"
    journey.snap("rubric-refused")
