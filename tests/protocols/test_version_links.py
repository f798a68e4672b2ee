"""The buttons from a version's page to its scoring dashboard and its analysis runs
(``apps.protocols.version_links``): each shown only to the roles that may open it, and only once
the version is frozen."""

import pytest

pytestmark = pytest.mark.django_db

V = "/protocols/OPB-T/v/1.0/"
SCORING = 'href="/protocols/OPB-T/v/1.0/scoring/"'
ANALYSIS = 'href="/protocols/OPB-T/v/1.0/analysis/"'


def test_the_pi_finds_scoring_and_analysis_on_a_frozen_version(client, frozen, creator):
    client.force_login(creator)
    html = client.get(V).content.decode()
    assert SCORING in html and ANALYSIS in html


def test_an_auditor_finds_the_analysis_but_not_the_scoring(client, frozen, auditor):
    client.force_login(auditor)
    html = client.get(V).content.decode()
    assert ANALYSIS in html and SCORING not in html


def test_a_draft_links_to_neither(client, draft, creator):
    client.force_login(creator)
    html = client.get(V).content.decode()
    assert SCORING not in html and ANALYSIS not in html
