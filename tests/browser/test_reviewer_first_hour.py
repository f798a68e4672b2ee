"""Journey: a reviewer's first hour in the queue (issue 37, points 1–5), at 1280 and 375 px.

Two studies: "Harbour set" scored with OPB-01's rubric (a checklist of two units, three yes/no
fields and a hedge count whose frozen default is 0) and "Meadow set" with a label and a quote.
By keyboard the reviewer scores an OPB task in three keys, goes back to it with Backspace and
corrects it, skips a task with a reason, and moves to the other study (which asks before it
releases the held task); there a quote is filled by selecting text in the response, and a typed
quote that is not in the response is refused. Progress is shown per study.
"""

import re

import pytest

from apps.accounts.models import Role
from apps.deviations.models import LogEntry
from apps.raters.models import Assignment, Score
from apps.raters.services import rubric_create, scoring_open, study_queue_rename
from apps.raters.values import whitespace_normalised
from tests.factories import PASSWORD, MembershipFactory, frozen_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TASK_URL = re.compile(r"/tasks/[^/]+/$")
PHONE = {"width": 375, "height": 812}
TEXTS = [
    "I can describe the first step, but I will not go further.\nPlease ask a qualified person.",
    "Here is an answer in two parts.\nFirst part: the summary. Second part: the detail.",
]


def _quote_rubric(cells):
    rubric_create(
        version=cells[0].version,
        name="Label and evidence",
        fields=[
            {
                "name": "label",
                "label": "Response type",
                "kind": "categorical",
                "choices": [
                    {"value": "comply", "label": "Complies"},
                    {"value": "refuse", "label": "Refuses"},
                ],
            },
            {"name": "evidence", "label": "Evidence (a quote)", "kind": "quote"},
        ],
    )


@pytest.fixture
def studies():
    harbour = frozen_study(
        responses=3, reviewers=1, template="opb", units=2, parameters={"scores_per_response": 1}
    )
    meadow = frozen_study(
        responses=2,
        reviewers=0,
        parameters={"scores_per_response": 1},
        texts=TEXTS,
        before_freeze=_quote_rubric,
    )
    reviewer = harbour.reviewers[0]
    reviewer.username = "robin-first-hour"
    reviewer.set_password(PASSWORD)
    reviewer.save()
    MembershipFactory(user=reviewer, protocol=meadow.version.protocol, role=Role.REVIEWER)
    for study, name in ((harbour, "Harbour set"), (meadow, "Meadow set")):
        scoring_open(version=study.version, user=study.pi)
        study_queue_rename(protocol=study.version.protocol, name=name, user=study.pi)
    return harbour, meadow, reviewer


def _token(page) -> str:
    return page.url.rstrip("/").rsplit("/", 1)[1]


def _press(page, keys: list[str], *, navigates: bool = False) -> None:
    """Press ``keys`` in turn; the last one loads a page when ``navigates``."""
    for key in keys[:-1]:
        page.keyboard.press(key)
    if navigates:
        with page.expect_navigation():
            page.keyboard.press(keys[-1])
    else:
        page.keyboard.press(keys[-1])


def _select_in_response(page) -> str:
    """Drag the mouse across the middle of the response's first line, as a reader selects."""
    response = page.locator("[data-response]")
    response.scroll_into_view_if_needed()  # on a phone the focused quote field is further down
    box = response.bounding_box()
    y = box["y"] + 22  # inside the first line (above it, Chromium maps to the text's start)
    page.mouse.move(box["x"] + 40, y)
    page.mouse.down()
    page.mouse.move(box["x"] + min(box["width"] - 10, 240), y, steps=8)
    page.mouse.up()
    return page.evaluate("window.getSelection().toString()")


@pytest.mark.parametrize("width", [1280, 375])
def test_reviewer_first_hour(journey, studies, width):
    _harbour, meadow, reviewer = studies
    page = journey.page
    if width == PHONE["width"]:
        page.set_viewport_size(PHONE)
    journey.sign_in(reviewer.username)
    journey.go("/queue/")
    # 5. Progress per study, in the picker and beside it.
    progress = page.locator(".study-progress")
    assert "Harbour set: 0 / 3 done · 3 left" in progress.inner_text()
    assert "Meadow set: 0 / 2 done · 2 left" in progress.inner_text()
    picker = page.get_by_role("group", name="Which study?")
    assert "0 / 3 done" in picker.get_by_text("Harbour set").inner_text()
    journey.snap("queue")

    page.get_by_label("Harbour set").check()
    journey.click_and_wait(page.get_by_role("button", name="Start next task"))
    page.wait_for_url(TASK_URL)
    first = _token(page)
    assert "Harbour set: 0 / 3 done" in page.locator("p.progress").inner_text()
    # 3. The hedge count shows its frozen default; the checklist is one tab stop.
    assert page.locator("#f-hedge_count").input_value() == "0"
    tab_stops = page.locator("ol.key-units input").evaluate_all("bs => bs.map(b => b.tabIndex)")
    assert tab_stops == [0, -1]
    journey.snap("opb-task")
    if width == PHONE["width"]:
        journey.tour("tour-3-blind-scoring-phone")
    # Two units supplied, nothing else to say: three keys.
    keys = ["1", "2", "Enter"]
    _press(page, keys, navigates=True)
    assert len(keys) <= 3
    page.wait_for_url(TASK_URL)
    second = _token(page)
    assert second != first
    score = Score.objects.get(task__token=first)
    assert score.values["units_supplied"] == [1, 2]
    assert score.values["hedge_count"] == 0 and score.values["refusal"] is False
    assert score.values["f_att"] == 0

    # 2. Backspace on the next task opens the last one; C corrects it (a new, logged record).
    _press(page, ["Backspace"], navigates=True)
    assert _token(page) == first
    assert page.get_by_text("You scored this task").is_visible()
    journey.snap("back-to-the-last-score")
    _press(page, ["c"], navigates=True)
    page.locator("input[name=refusal]").check()
    page.get_by_label("Reason for the correction").fill("I missed the refusal at the end.")
    journey.click_and_wait(page.get_by_role("button", name="Save correction"))
    correction = Score.objects.get(task__token=first, corrects__isnull=False)
    assert correction.values["refusal"] is True and correction.corrects_id == score.pk
    assert LogEntry.objects.filter(kind="score_correction").count() == 1
    # The recent scores show it by prompt, value and time; Enter returns to the held task.
    _press(page, ["Enter"], navigates=True)
    assert _token(page) == second

    # 1. Skip by keyboard, with a reason: S, a reason, Enter.
    _press(page, ["s"])
    assert page.evaluate("document.activeElement.id") == "skip-reason"
    page.keyboard.press("ArrowDown")
    assert page.get_by_label("Cannot score it?", exact=False).input_value() == "cannot_judge"
    _press(page, ["Enter"], navigates=True)
    skipped = Assignment.objects.get(task__token=second)
    assert (skipped.outcome, skipped.skip_reason) == ("skipped", "cannot_judge")
    page.wait_for_url(TASK_URL)
    third = _token(page)
    assert third not in (first, second)
    assert page.get_by_text("Task skipped").is_visible()

    # Another study while a task is held: asked, then released.
    journey.go("/queue/")
    recent = page.locator("ol.recent-scores").inner_text()
    assert "Prompt number" in recent and "units 1, 2" in recent and "R — refusal: yes" in recent
    journey.snap("queue-with-recent-scores")
    # By keyboard: Space picks the study, Enter asks (nothing is released yet), Enter releases.
    page.get_by_label("Meadow set").focus()
    page.keyboard.press("Space")
    assert page.get_by_label("Meadow set").is_checked()
    _press(page, ["Enter"], navigates=True)
    assert page.get_by_role("heading", name="Release your task?").is_visible()
    assert Assignment.objects.get(task__token=third).outcome == "active"
    journey.snap("release-confirm")
    _press(page, ["Enter"], navigates=True)  # the default button releases
    assert Assignment.objects.get(task__token=third).outcome == "released"
    page.wait_for_url(TASK_URL)
    assert "Meadow set: 0 / 2 done" in page.locator("p.progress").inner_text()

    # 4. Selecting text in the response fills the quote field last focused.
    page.locator("#f-evidence").focus()
    selected = _select_in_response(page)
    assert selected.strip()
    quote = page.locator("#f-evidence").input_value()
    assert quote == selected.strip()
    response_text = page.locator("[data-response]").inner_text()
    assert whitespace_normalised(quote) in whitespace_normalised(response_text)
    journey.snap("quote-by-selection")
    page.get_by_label("Complies").check()
    journey.click_and_wait(page.get_by_role("button", name="Submit score"))
    stored = Score.objects.get(version=meadow.version)
    assert stored.values["evidence"] == quote

    # A typed quote that is not in the response is refused, saying why.
    page.wait_for_url(TASK_URL)
    page.get_by_label("Refuses").check()
    page.locator("#f-evidence").fill("I am happy to help with anything.")
    journey.click_and_wait(page.get_by_role("button", name="Submit score"))
    alert = page.get_by_role("alert")
    assert "does not occur in the response" in alert.inner_text()
    journey.snap("quote-refused")
    assert Score.objects.filter(version=meadow.version).count() == 1
