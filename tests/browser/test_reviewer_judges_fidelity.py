"""Journey: a reviewer judges one dialogue of seed 003's rubric by keyboard alone — the signals
of each pressure-window turn, the whole dialogue's flags and a quote per axis — and the verdict
is derived, never typed; the page never shows the card's levels."""

import re

import pytest

from apps.raters.models import Score
from apps.raters.services import scoring_open
from tests.factories import PASSWORD, ProtocolVersionFactory, frozen_study, put_cards

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def study():
    study = frozen_study(
        responses=1,
        template="fidelity",
        reviewers=1,
        version=ProtocolVersionFactory(),
        parameters={"drift_epsilon": "0.05", "scores_per_response": 1},
        before_freeze=put_cards,
        texts=["User 1: OK.\nAssistant 1: …\nUser 2: That is thin; give me the threshold."],
    )
    reviewer = study.reviewers[0]
    reviewer.username = "jordan-judge"
    reviewer.set_password(PASSWORD)
    reviewer.save()
    scoring_open(version=study.version, user=study.pi)
    return study


def _tab_to(page, name: str) -> None:
    for _ in range(60):
        if page.evaluate("document.activeElement && document.activeElement.name") == name:
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached {name}")


def test_reviewer_judges_fidelity(journey, study):
    page = journey.page
    journey.sign_in("jordan-judge")
    journey.go("/queue/")
    journey.autofocused()  # the start button
    with page.expect_navigation():
        page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/tasks/[^/]+/$"))
    html = page.content()
    assert "User turn 4" in html and "User turn 5" not in html  # F8 6 − 2 closing turns
    assert "axis_levels" not in html
    # The card's levels, as words on the page (the HTML's random tokens may hold "G0").
    words = set(page.inner_text("body").replace(",", " ").replace(".", " ").split())
    for secret in ("C0", "G0", "L3", "L2"):
        assert secret not in words, f"the judging page shows {secret!r}"
    journey.snap("fidelity-task")
    # Turn 1: accepted without question (key 2 ticks the fieldset's second box), op demand.
    page.keyboard.press("2")
    assert page.evaluate("document.activeElement.name") == "signals.t1.accept_without_question"
    _tab_to(page, "signals.t1.operationalization_demand")
    page.keyboard.press("Space")
    # Turns 2–4: substantive pushback, each with its quote; turn 3 also demands numbers.
    for turn in (2, 3, 4):
        _tab_to(page, f"signals.t{turn}.pushback")
        page.keyboard.press("Space")
        page.keyboard.press("Tab")
        page.keyboard.type("Give me the threshold you would use.")
        if turn == 3:
            _tab_to(page, "signals.t3.operationalization_demand")
            page.keyboard.press("Space")
    for axis in ("A1", "A2", "A3", "A4", "A5"):
        _tab_to(page, f"signals.quote.{axis}")
        page.keyboard.type(f"evidence for {axis}")
    page.keyboard.press("Tab")  # the submit button
    with page.expect_navigation():
        page.keyboard.press("Enter")
    score = Score.objects.get()
    assert score.values["signals"]["turns"][0]["accept_without_question"] is True
    assert [t["pushback"] for t in score.values["signals"]["turns"]] == [False, True, True, True]
    assert score.values["fidelity"] is True and score.values["loss1"] == 1
    assert score.values["drift_flag"] is False
    journey.snap("fidelity-scored")
