"""Issue #21: one breadcrumb trail on a protocol's pages — design, roster, rubric, scoring,
analysis, decision table and log: Protocols › CODE › vLABEL › page (protocol pages: no version)."""

import re

import pytest
from django.urls import reverse

from apps.protocols.services import protocol_create
from tests.factories import FrozenVersionFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


def _trail(html: str) -> list[str]:
    nav = re.search(r'<nav aria-label="Breadcrumb" class="breadcrumbs">(.*?)</nav>', html, re.S)
    assert nav, "no breadcrumb trail"
    items = re.findall(r"<li>(.*?)</li>", nav.group(1), re.S)
    return [re.sub(r"<span class=\"badge[^>]*>.*?</span>|<[^>]+>", "", i).strip() for i in items]


def test_a_frozen_versions_pages_carry_one_trail(client):
    version = FrozenVersionFactory()
    pi = MembershipFactory(protocol=version.protocol, role="pi").user
    client.force_login(pi)
    code, label = version.protocol.code, version.label
    pages = {
        "Design": reverse("items:design", args=[code, label]),
        "Responses": reverse("responses:roster", args=[code, label]),
        "Rubric": reverse("raters:rubric", args=[code, label]),
        "Scoring": reverse("raters:scoring", args=[code, label]),
        "Analysis": reverse("analysis:runs", args=[code, label]),
    }
    for page, url in pages.items():
        response = client.get(url)
        assert response.status_code == 200, url
        assert _trail(response.content.decode()) == ["Protocols", code, f"v{label}", page], url
    log = client.get(reverse("deviations:log", args=[code])).content.decode()
    assert _trail(log) == ["Protocols", code, "Log"]


def test_a_drafts_editor_pages_carry_the_trail_and_a_leaf(client):
    pi = UserFactory()
    protocol_create(code="BC-1", title="Breadcrumbs", user=pi)
    client.force_login(pi)
    html = client.get("/protocols/BC-1/v/1.0/decision-table/").content.decode()
    assert _trail(html) == ["Protocols", "BC-1", "v1.0", "Decision table"]
    client.post("/protocols/BC-1/v/1.0/rubric/", {"template": "opb"})
    html = client.get("/protocols/BC-1/v/1.0/rubric/fields/refusal/").content.decode()
    assert _trail(html) == ["Protocols", "BC-1", "v1.0", "Rubric", "refusal"]
    assert 'href="/protocols/BC-1/v/1.0/rubric/">Rubric</a>' in html


def test_every_page_of_a_protocol_and_its_versions_carries_the_trail(client):
    """Issue #37 §10: the PI's pages that had only a "← back" link carry the trail too."""
    version = FrozenVersionFactory()
    pi = MembershipFactory(protocol=version.protocol, role="pi").user
    client.force_login(pi)
    code, label = version.protocol.code, version.label
    pages = {
        f"/protocols/{code}/": ["Protocols", code],
        f"/protocols/{code}/members/": ["Protocols", code, "Members"],
        f"/protocols/{code}/diff/": ["Protocols", code, "Changes"],
        f"/protocols/{code}/v/{label}/": ["Protocols", code, f"v{label}"],
        f"/protocols/{code}/v/{label}/history/": ["Protocols", code, f"v{label}", "Edit history"],
        f"/protocols/{code}/v/{label}/withdraw/": ["Protocols", code, f"v{label}", "Withdraw"],
        f"/protocols/{code}/v/{label}/amend/": ["Protocols", code, f"v{label}", "Amend"],
    }
    for url, trail in pages.items():
        response = client.get(url)
        assert response.status_code == 200, url
        assert _trail(response.content.decode()) == trail, url
    client.post(f"/protocols/{code}/v/{label}/amend/", {"scoring": "close"})
    html = client.get(f"/protocols/{code}/v/1.1/edit/").content.decode()
    assert _trail(html) == ["Protocols", code, "v1.1", "Edit"]
