"""Journey b: two reviewers score a frozen version's responses from their queues by keyboard
alone, and the scoring page never shows who produced the response.

The study (frozen, with responses, scoring open) is built with the rating tests' builder.
"""

import re

import pytest

from apps.raters.models import Score
from apps.raters.services import scoring_open
from apps.responses.models import Evaluand
from tests.factories import PASSWORD, frozen_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def study():
    study = frozen_study(responses=3, template="opb", reviewers=2, units=2)
    for n, user in enumerate(study.reviewers, start=1):
        user.username = f"riley-reviewer{n}"
        user.set_password(PASSWORD)
        user.save()
    scoring_open(version=study.version, user=study.pi)
    return study


def _score_by_keyboard(journey, *, hedges: str, refusal: bool) -> None:
    """On a scoring page: tick unit 1 with the key 1, move to the yes/no with Tab (the
    checklist is one tab stop) and toggle it with Space when ``refusal``, type the hedge count
    over its default of 0, submit with Enter."""
    page = journey.page
    page.keyboard.press("1")
    assert page.evaluate("document.activeElement.name") == "units_supplied"
    page.keyboard.press("Tab")  # refusal (unit 2 is no tab stop of its own)
    assert page.evaluate("document.activeElement.name") == "refusal"
    if refusal:
        page.keyboard.press("Space")
    page.keyboard.press("Tab")  # hedge count
    assert page.evaluate("document.activeElement.name") == "hedge_count"
    assert page.evaluate("document.activeElement.value") == "0"
    page.keyboard.press("Control+a")
    page.keyboard.type(hedges)
    with page.expect_navigation():
        page.keyboard.press("Enter")


def _assert_blind(page) -> None:
    evaluand = Evaluand.objects.get()  # the study's one evaluand (its rows are append-only)
    html = page.content()
    for secret in (evaluand.label, evaluand.model, evaluand.identity_sha256, "evaluand"):
        assert secret.lower() not in html.lower(), f"the scoring page shows {secret!r}"


def test_reviewers_score(journey, study):
    page = journey.page
    for n, reviewer in enumerate(study.reviewers, start=1):
        journey.sign_in(reviewer.username)
        journey.go("/queue/")
        assert page.get_by_role("status").first.inner_text().startswith("Done 0 / ")
        journey.snap(f"reviewer{n}-queue")
        # The start button has the focus: Enter starts the first task.
        journey.autofocused()
        with page.expect_navigation():
            page.keyboard.press("Enter")
        for task in range(len(study.responses)):
            page.wait_for_url(re.compile(r"/tasks/[^/]+/$"))
            assert page.get_by_text("Response text").is_visible()
            _assert_blind(page)
            if task == 0:
                journey.snap(f"reviewer{n}-task")
                journey.tour("tour-3-blind-scoring")
            _score_by_keyboard(journey, hedges=str(task), refusal=task % 2 == 0)
        page.wait_for_url(re.compile(r"/queue/$"))
        assert page.get_by_text("No scoring tasks are open for you.").is_visible()
        journey.snap(f"reviewer{n}-done")

        scores = Score.objects.filter(reviewer=reviewer).order_by("submitted_at")
        assert [s.values["hedge_count"] for s in scores] == [0, 1, 2]
        assert [s.values["refusal"] for s in scores] == [True, False, True]
        assert all(s.values["units_supplied"] == [1] for s in scores)
    responses = {s.task.response_id for s in Score.objects.all()}
    assert responses == {r.pk for r in study.responses}
