"""Issue 34 §10, "Checked by": a PI registers a two-condition refusal study on the general
comparison pipeline in the browser, freezes it, imports the responses and an LLM judge's
scores, runs the analysis and reads the difference of refusal rates with its interval.

Written in the browser: the protocol (the "Comparison of conditions" preset), its sections,
the plan's parameters (the comparison "warned vs plain" among them), the rubric's judged field,
the judge on the scorer roster, the freeze, both imports (files uploaded, previewed, confirmed),
the run, the unsealing and the report. Set up through services between steps, as the other
journeys do, because authoring them page by page has its own tests: the design (one level, 12
plain and 12 warned prompts) and the roster of two models (``tests.factories.comparison_design``).
"""

import re

import pytest

from apps.protocols.models import Protocol
from tests.factories import (
    answer_rows,
    comparison_design,
    csv_bytes,
    jsonl,
    judge_rows,
    make_user,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CODE = "CMP-J1"
SECTIONS = {
    "hypotheses": "A safety warning in the prompt raises the refusal rate of everyday requests.",
    "design": "12 everyday requests asked plainly, 12 asked with a warning; two models.",
    "analysis": "The difference of refusal rates, warned − plain, per model, clustered by item.",
}


def _refusal(item: str, evaluand: str, repetition: int) -> bool:
    """Warned prompts 1–9 of 12 refused (75 %), plain prompts 1–3 (25 %)."""
    condition, number = item.rsplit("-", 1)
    return int(number) <= (9 if condition == "warned" else 3)


def _upload(journey, url: str, name: str, data: bytes, confirm: str) -> None:
    page = journey.page
    journey.go(url)
    page.locator('input[name="file"]').set_input_files(
        files=[{"name": name, "mimeType": "text/plain", "buffer": data}]
    )
    journey.click_and_wait(page.get_by_role("button", name="Check and preview"))
    journey.snap(f"preview-{name.split('.')[0]}")
    journey.click_and_wait(page.get_by_role("button", name=re.compile(confirm)))


def test_pi_compares_two_conditions(journey):
    pi = make_user("cmp-pi")
    page = journey.page
    journey.sign_in("cmp-pi")
    base = f"/protocols/{CODE}/v/1.0"

    # The protocol, on the general comparison's preset.
    journey.go("/protocols/new/")
    page.get_by_label("Code").fill(CODE)
    page.get_by_label("Title").fill("Warned everyday requests")
    page.get_by_label("Plan template").select_option("comparison")
    page.get_by_role("button", name="Create protocol").click()
    page.wait_for_url(re.compile(rf"{base}/edit/$"))

    # Its sections and plan: the comparison it names, the clustering, the seed.
    for name, text in SECTIONS.items():
        page.locator(f"#section-{name}").fill(text)
    page.locator("#param-seed").fill("20261205")
    page.locator("#param-comparisons").fill('["warned vs plain"]')
    page.locator("#param-cluster").select_option("item")
    journey.settle()
    journey.click_and_wait(page.get_by_role("button", name="Save all"))
    journey.snap("plan-written")

    # The rubric: one field the LLM judge scores.
    journey.go(f"{base}/rubric/")
    form = page.locator("#add-field-form")
    form.locator('[name="add-name"]').fill("verdict")
    form.locator('[name="add-label"]').fill("Did the reply refuse?")
    form.locator('[name="add-kind"]').select_option("categorical")
    form.locator('[name="add-choices"]').fill("complied|Complied\nrefused|Refused")
    form.locator('[name="add-scored_by"]').select_option("scorer")
    form.locator('[name="add-scorer_role"]').fill("judge")
    journey.settle()
    journey.click_and_wait(form.get_by_role("button", name="Add the field"))
    assert page.locator("table.list tbody tr").count() == 1

    # The judge on the scorer roster.
    journey.go(f"{base}/scorers/")
    register = page.locator("form", has=page.get_by_role("button", name="Register"))
    for name, value in {
        "code": "judge-1",
        "role": "judge",
        "name": "refusal-judge",
        "version": "2026.1",
        "model": "judge-model-2026-01",
        "provider": "example-provider",
        "prompt_sha256": "ab" * 32,
    }.items():
        register.locator(f'[name="{name}"]').fill(value)
    register.locator('[name="kind"]').select_option("llm_judge")
    journey.click_and_wait(register.get_by_role("button", name="Register"))
    assert page.get_by_role("cell", name=re.compile("judge-1")).count()
    journey.snap("scorer-roster")

    # The design and roster (services: see the module docstring), then the freeze.
    draft = Protocol.objects.get(code=CODE).versions.get(label="1.0")
    comparison_design(draft, pi)
    journey.go(f"{base}/edit/")
    codes = page.locator("#freeze-checklist li[data-code]").evaluate_all(
        "items => items.map(li => li.dataset.code + ': ' + li.innerText)"
    )
    assert codes == [], codes
    page.get_by_label(f"Type {CODE} to freeze").fill(CODE)
    page.locator("#freeze-button").click()
    page.wait_for_url(re.compile(rf"{base}/$"))
    draft.refresh_from_db()
    assert draft.state == "frozen"
    journey.snap("frozen")

    # The responses, then the judge's scores, each uploaded, previewed and confirmed.
    _upload(
        journey,
        f"{base}/responses/import/",
        "responses.csv",
        csv_bytes(answer_rows(draft)),
        r"^Import \d+ attempts",
    )
    assert page.get_by_text(re.compile("48 attempts|imported", re.I)).count()
    _upload(
        journey,
        f"{base}/scorers/import/",
        "judge.jsonl",
        jsonl(judge_rows(draft, _refusal)),
        r"^Import 48 machine scores",
    )

    # The analysis, unsealed: the difference of refusal rates with its interval.
    journey.go(f"{base}/analysis/")
    journey.click_and_wait(page.get_by_role("button", name="Run analysis"))
    if page.get_by_role("button", name="Run anyway on thin data").count():
        journey.click_and_wait(page.get_by_role("button", name="Run anyway on thin data"))
    page.wait_for_url(re.compile(r"/analysis/1/$"))
    journey.click_and_wait(page.get_by_role("link", name="Unseal outcomes…"))
    page.get_by_label("Type the protocol code to confirm").fill(CODE)
    journey.click_and_wait(page.get_by_role("button", name="Unseal outcomes"))
    assert page.url.endswith(f"{base}/analysis/1/")
    table = page.locator("#comparison-differences")
    row = table.locator("tbody tr", has_text="verdict=refused").filter(has_text="alpha")
    cells = row.locator("td").all_inner_texts()
    assert cells[2] == "warned − plain"
    assert cells[3] == "0.500"  # 75 % − 25 %
    low, high = (float(x) for x in re.findall(r"-?\d\.\d{3}", cells[4]))
    assert 0 < low < 0.5 < high < 1, cells[4]
    assert cells[-1] == "diff[verdict=refused][warned - plain]"
    assert page.locator("main h2").first.inner_text().startswith("Finding")
    journey.snap("report")
    journey.tour("tour-12-comparison-report")
