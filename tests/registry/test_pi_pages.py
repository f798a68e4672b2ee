"""The PI's publish page: publish, embargo, links; bad input is a 400 with nothing written."""

from datetime import timedelta

import pytest
from django.urls import reverse

from apps.registry.models import Publication, ViewLink
from apps.registry.services import embargo_limit, today_utc

pytestmark = pytest.mark.django_db


def test_the_pi_publishes_under_embargo_then_ends_it(client, frozen, study_pi):
    client.force_login(study_pi)
    code = frozen.protocol.code
    page = client.get(reverse("registry:publish", args=[code]))
    assert page.status_code == 200 and "never be made private again" in page.content.decode()
    day = today_utc() + timedelta(days=20)
    answer = client.post(
        reverse("registry:publish-version", args=[code, "1.0"]),
        {"embargo_until": day.isoformat(), "authors": "G. Hopper"},
    )
    assert answer.status_code == 302
    publication = Publication.objects.get(version=frozen)
    assert publication.embargo_until == day and not publication.is_public
    client.post(reverse("registry:embargo-end", args=[code, "1.0"]))
    publication.refresh_from_db()
    assert publication.is_public


@pytest.mark.parametrize(
    "embargo",
    [
        lambda: (today_utc() - timedelta(days=1)).isoformat(),
        lambda: (embargo_limit(today_utc()) + timedelta(days=1)).isoformat(),
        lambda: "not-a-date",
    ],
    ids=["past", "past-four-years", "garbage"],
)
def test_a_bad_embargo_is_a_400_and_nothing_is_written(client, frozen, study_pi, embargo):
    client.force_login(study_pi)
    answer = client.post(
        reverse("registry:publish-version", args=[frozen.protocol.code, "1.0"]),
        {"embargo_until": embargo()},
    )
    assert answer.status_code == 400
    assert 'id="publish-errors"' in answer.content.decode()
    assert not Publication.objects.exists()


def test_publishing_twice_through_the_api_is_a_400(client, frozen, study_pi):
    client.force_login(study_pi)
    url = f"/api/v1/protocols/{frozen.protocol.code}/versions/1.0/publication"
    assert client.post(url, {}, content_type="application/json").status_code == 201
    again = client.post(url, {}, content_type="application/json")
    assert again.status_code == 400 and "already published" in again.content.decode()
    bad = client.post(
        f"/api/v1/protocols/{frozen.protocol.code}/versions/1.0/publication",
        {"embargo_until": "2020-01-01"},
        content_type="application/json",
    )
    assert bad.status_code == 400
    assert Publication.objects.count() == 1


def test_someone_not_the_pi_cannot_publish(client, frozen, stranger):
    client.force_login(stranger)
    url = f"/api/v1/protocols/{frozen.protocol.code}/versions/1.0/publication"
    assert client.post(url, {}, content_type="application/json").status_code == 404
    assert client.get(reverse("registry:publish", args=[frozen.protocol.code])).status_code == 404
    assert not Publication.objects.exists()


def test_a_link_is_made_on_the_page_and_shown_once(client, frozen, study_pi):
    client.force_login(study_pi)
    code = frozen.protocol.code
    client.post(reverse("registry:view-link-new", args=[code, "1.0"]), {"anonymised": "on"})
    link = ViewLink.objects.get()
    assert link.anonymised
    page = client.get(reverse("registry:publish", args=[code])).content.decode()
    assert f"/r/_view/{link.token}/" in page
