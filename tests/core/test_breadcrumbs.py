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
