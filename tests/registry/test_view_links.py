"""View-only links for peer review: one private version, read-only, optionally anonymised;
revocable; creation, revocation and first use logged."""

from datetime import timedelta

import pytest
from django.urls import reverse

from apps.deviations.models import EntryKind, LogEntry
from apps.registry.models import ViewLink
from apps.registry.services import today_utc, version_publish, view_link_create
from tests.factories import ProtocolVersionFactory

pytestmark = pytest.mark.django_db


def _link_entries(version):
    return list(
        LogEntry.objects.filter(protocol=version.protocol, kind=EntryKind.VIEW_LINK).order_by("seq")
    )


@pytest.fixture
def named_pi(study_pi):
    study_pi.first_name, study_pi.last_name = "Grace", "Hopper"
    study_pi.save()
    return study_pi


def test_an_anonymised_link_opens_the_embargoed_version_without_any_name(client, frozen, named_pi):
    version_publish(
        version=frozen,
        user=named_pi,
        authors="Grace Hopper (Naval Institute)",
        embargo_until=today_utc() + timedelta(days=90),
    )
    link = view_link_create(version=frozen, user=named_pi, anonymised=True, note="Journal X")
    url = reverse("registry:view-link", args=[link.token])
    page = client.get(url)
    html = page.content.decode()
    assert page.status_code == 200
    assert frozen.sha256 in html and "The background." in html
    for name in ("Grace", "Hopper", "Naval Institute", named_pi.username, "Journal X"):
        assert name not in html, name
    assert page["Referrer-Policy"] == "no-referrer"
    # Only this version's pages: no way from here to the protocol's other pages.
    assert f'href="/r/{frozen.protocol.code}/' not in html
    assert f'href="/protocols/{frozen.protocol.code}/' not in html
    document = client.get(reverse("registry:view-link-document", args=[link.token]))
    import hashlib

    assert hashlib.sha256(document.content).hexdigest() == frozen.sha256
    # The version itself stays private.
    assert (
        client.get(reverse("registry:version", args=[frozen.protocol.code, "1.0"])).status_code
        == 404
    )


def test_creation_and_the_first_use_only_are_logged_without_the_token(client, frozen, study_pi):
    link = view_link_create(version=frozen, user=study_pi)
    url = reverse("registry:view-link", args=[link.token])
    client.get(url)
    client.get(url)
    created, used = _link_entries(frozen)
    assert "Created a view-only link" in created.rationale
    assert "opened for the first time" in used.rationale
    assert all(link.token not in entry.rationale for entry in (created, used))
    link.refresh_from_db()
    assert link.first_used_at is not None


def test_a_revoked_link_answers_exactly_as_an_unknown_one(client, frozen, study_pi):
    link = view_link_create(version=frozen, user=study_pi)
    client.force_login(study_pi)
    revoke = f"/api/v1/protocols/{frozen.protocol.code}/view-links/{link.pk}/revoke"
    assert client.post(revoke).status_code == 200
    again = client.post(revoke)
    assert again.status_code == 400 and "already revoked" in again.content.decode()
    client.logout()
    revoked = client.get(reverse("registry:view-link", args=[link.token]))
    unknown = client.get(reverse("registry:view-link", args=["x" * 43]))
    assert revoked.status_code == unknown.status_code == 404
    assert len(_link_entries(frozen)) == 2  # created, revoked (never opened)


def test_the_api_creates_links_for_this_protocols_frozen_versions_only(client, frozen, study_pi):
    client.force_login(study_pi)
    url = f"/api/v1/protocols/{frozen.protocol.code}/view-links"
    created = client.post(
        url, {"version": "1.0", "anonymised": True}, content_type="application/json"
    )
    assert created.status_code == 201
    assert created.json()["url"].startswith("http://testserver/r/_view/")
    # Another protocol's version (known to the PI or not): 404, nothing written.
    other = ProtocolVersionFactory(label="7.0")
    before = ViewLink.objects.count()
    assert (
        client.post(url, {"version": other.label}, content_type="application/json").status_code
        == 404
    )
    # A draft of this protocol: 400.
    ProtocolVersionFactory(protocol=frozen.protocol, label="2.0", created_by=study_pi)
    draft = client.post(url, {"version": "2.0"}, content_type="application/json")
    assert draft.status_code == 400 and "draft" in draft.content.decode()
    assert ViewLink.objects.count() == before


def test_only_the_pi_creates_or_revokes_links(client, frozen, study_pi, stranger):
    link = view_link_create(version=frozen, user=study_pi)
    client.force_login(stranger)
    base = f"/api/v1/protocols/{frozen.protocol.code}/view-links"
    assert client.post(base, {"version": "1.0"}, content_type="application/json").status_code == 404
    assert client.post(f"{base}/{link.pk}/revoke").status_code == 404
    assert not ViewLink.objects.get(pk=link.pk).is_revoked
