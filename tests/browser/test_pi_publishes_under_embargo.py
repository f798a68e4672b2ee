"""A PI publishes a frozen version under embargo and gives peer reviewers an anonymised
view-only link; a signed-out reader opens it and finds no PI name; when the embargo ends by
itself, the reader finds the version in the public registry's index."""

from datetime import timedelta

import pytest

from apps.accounts.models import Role
from apps.registry.models import Publication
from apps.registry.services import embargoes_end_due, today_utc
from tests.factories import FrozenVersionFactory, MembershipFactory, ProtocolFactory, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NAMES = ("Pat", "Investigator", "Example University", "pat-pi")


def test_pi_publishes_under_embargo(journey):
    pi = make_user("pat-pi")
    pi.first_name, pi.last_name = "Pat", "Investigator"
    pi.save()
    version = FrozenVersionFactory(
        protocol=ProtocolFactory(code="PUB-B", title="Refusal under pressure", created_by=pi),
        created_by=pi,
    )
    MembershipFactory(protocol=version.protocol, user=pi, role=Role.PI)
    page = journey.page

    # The PI publishes v1.0 under a 30-day embargo.
    journey.sign_in("pat-pi")
    journey.go("/protocols/PUB-B/")
    journey.click_and_wait(page.get_by_role("link", name="Publish in the public registry"))
    day = today_utc() + timedelta(days=30)
    page.get_by_label("Authors as they are to be named (comma-separated)").fill(
        "Pat Investigator (Example University)"
    )
    page.get_by_label("Embargo until (empty: public at once)").fill(day.isoformat())
    journey.click_and_wait(page.get_by_role("button", name="Publish v1.0"))
    assert f"Under embargo until {day:%Y-%m-%d}" in page.inner_text("#version-1\\.0")
    assert not Publication.objects.get(version=version).is_public

    # An anonymised view-only link for the journal's reviewers.
    page.get_by_label("Anonymised: no PI or institution names on the pages it opens").check()
    page.get_by_label("Who it is for (private note)").fill("Journal reviewers")
    journey.click_and_wait(page.get_by_role("button", name="Create a view-only link to v1.0"))
    link = page.locator("#new-link-url").input_value()
    assert "/r/_view/" in link
    journey.snap("published-under-embargo")
    journey.tour("tour-9-publish")

    # A signed-out reader: the version is not public, the link opens it with no name on it.
    journey.context.clear_cookies()
    assert journey.go("/r/PUB-B/1.0/").status == 404
    assert "PUB-B" not in journey.go("/r/").text()
    page.goto(link)
    text = page.content()
    assert version.sha256 in text
    for name in NAMES:
        assert name not in text, name
    journey.snap("anonymised-view-only-link")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download the document").click()
    document = download.value.path().read_text()
    for name in NAMES:
        assert name not in document, name

    # The embargo's day comes: the beat task ends it, and the reader finds it in the index.
    assert embargoes_end_due(today=day) == [Publication.objects.get(version=version).pk]
    journey.go("/r/")
    page.get_by_label("Code or title").fill("refusal")
    journey.click_and_wait(page.get_by_role("button", name="Search"))
    journey.click_and_wait(page.get_by_role("link", name="PUB-B"))
    journey.click_and_wait(page.get_by_role("link", name="v1.0"))
    assert "Pat Investigator (Example University)" in page.content()
    assert version.sha256 in page.content()
    journey.snap("public-after-the-embargo")
    journey.tour("tour-10-public-version")
