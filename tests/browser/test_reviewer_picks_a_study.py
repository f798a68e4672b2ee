"""Journey: a reviewer with open tasks in two studies picks one by the neutral name each PI gave
it, scores there, then takes "any"; nothing on the picker names a study's code or title."""

import re

import pytest

from apps.accounts.models import Role
from apps.raters.models import ScoringTask
from apps.raters.services import scoring_open, study_queue_rename
from tests.factories import PASSWORD, MembershipFactory, frozen_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def studies():
    first = frozen_study(responses=2, reviewers=1, parameters={"scores_per_response": 1})
    second = frozen_study(responses=2, reviewers=0, parameters={"scores_per_response": 1})
    reviewer = first.reviewers[0]
    reviewer.username = "pat-two-studies"
    reviewer.set_password(PASSWORD)
    reviewer.save()
    MembershipFactory(user=reviewer, protocol=second.version.protocol, role=Role.REVIEWER)
    for study, name in ((first, "Harbour set"), (second, "Meadow set")):
        scoring_open(version=study.version, user=study.pi)
        study_queue_rename(protocol=study.version.protocol, name=name, user=study.pi)
    return first, second, reviewer


def test_reviewer_picks_a_study(journey, studies):
    first, second, reviewer = studies
    page = journey.page
    journey.sign_in(reviewer.username)
    journey.go("/queue/")
    picker = page.get_by_role("group", name="Which study?")
    assert picker.is_visible()
    html = page.content()
    for study in (first, second):
        protocol = study.version.protocol
        assert protocol.code not in html and protocol.title not in html
    journey.snap("picker")
    page.get_by_label("Meadow set").check()
    journey.click_and_wait(page.get_by_role("button", name="Start next task"))
    for _ in range(2):
        page.wait_for_url(re.compile(r"/tasks/[^/]+/$"))
        token = page.url.rstrip("/").rsplit("/", 1)[1]
        assert ScoringTask.objects.get(token=token).version_id == second.version.pk
        page.get_by_label("Full refusal", exact=False).first.check()
        journey.click_and_wait(page.get_by_role("button", name="Submit score"))
    # The chosen study is finished: back at the queue, only the other one is left to pick.
    page.wait_for_url(re.compile(r"/queue/$"))
    assert page.get_by_role("group", name="Which study?").count() == 0
    assert "Meadow set: 2 / 2 done · finished" in page.locator(".study-progress").inner_text()
    journey.snap("one-study-left")
    journey.click_and_wait(page.get_by_role("button", name="Start next task"))
    page.wait_for_url(re.compile(r"/tasks/[^/]+/$"))
    token = page.url.rstrip("/").rsplit("/", 1)[1]
    assert ScoringTask.objects.get(token=token).version_id == first.version.pk
