"""Seed 003: the PI publishes the rubric text from the version's rubric page, the protocol code
typed to confirm; a wrong code publishes nothing; a reviewer or an editor cannot publish."""

import pytest

from apps.accounts.models import Role
from apps.deviations.models import LogEntry
from apps.raters.models import RubricPublication
from apps.raters.services import rubric_apply_template
from apps.raters.services.rubric_text import rubric_text_set
from tests.factories import (
    MembershipFactory,
    ProtocolVersionFactory,
    freeze,
    put_cards,
    ready_for_freeze,
    set_parameters,
)

pytestmark = pytest.mark.django_db

TEXT = "# injection-fidelity (loss-1)\n\nYou judge ONE sample.\n"


@pytest.fixture
def study():
    version = ProtocolVersionFactory()
    rubric_apply_template(version=version, template="fidelity")
    row = rubric_text_set(version=version, text=TEXT)
    _freeze_with_cards(version)
    people = {
        role: MembershipFactory(protocol=version.protocol, role=role).user
        for role in (Role.PI, Role.EDITOR, Role.REVIEWER)
    }
    return version, row.sha256, people


def _freeze_with_cards(version) -> None:
    # The fidelity plan reads every cell's card and the drift tolerance: the gate refuses a
    # cell without a card and a plan without the tolerance.
    set_parameters(version, drift_epsilon="0.05")
    ready_for_freeze(version, version.created_by)
    put_cards(version.cells.all())
    freeze(version)


def _page(version) -> str:
    return f"/protocols/{version.protocol.code}/v/{version.label}/rubric/"


def _publish(client, version, typed):
    return client.post(_page(version) + "text/publish/", {"confirmation": typed})


def test_the_page_shows_the_texts_address_and_that_it_is_not_yet_published(client, study):
    version, digest, people = study
    client.force_login(people[Role.PI])
    body = client.get(_page(version)).content.decode()
    assert digest in body
    assert f"/api/v1/blob/{digest[:16]}" in body
    assert "no: only the protocol" in body
    assert 'name="confirmation"' in body


def test_the_pi_publishes_with_the_code_typed(client, study):
    version, digest, people = study
    client.force_login(people[Role.PI])
    entries = LogEntry.objects.count()
    response = _publish(client, version, f"  {version.protocol.code} ")
    assert response.status_code == 302
    assert response["Location"] == _page(version)
    publication = RubricPublication.objects.get(sha256=digest)
    assert publication.published_by == people[Role.PI]
    assert LogEntry.objects.count() == entries + 1
    body = client.get(_page(version)).content.decode()
    assert "anyone may read it" in body
    assert 'name="confirmation"' not in body  # nothing left to publish
    # Signed out, the text is now readable at its address.
    client.logout()
    assert client.get(f"/api/v1/blob/{digest[:16]}").status_code == 200


@pytest.mark.parametrize("typed", ["", "WRONG", "x" * 500])
def test_a_wrong_code_is_a_form_error_and_publishes_nothing(client, study, typed):
    version, digest, people = study
    client.force_login(people[Role.PI])
    entries = LogEntry.objects.count()
    response = _publish(client, version, typed)
    assert response.status_code == 200
    body = response.content.decode()
    assert 'role="alert"' in body
    assert not RubricPublication.objects.exists()
    assert LogEntry.objects.count() == entries
    client.logout()
    assert client.get(f"/api/v1/blob/{digest[:16]}").status_code == 404


def test_a_draft_refuses_as_a_form_error_not_a_500(client, study):
    version, _, people = study
    draft = ProtocolVersionFactory(protocol=version.protocol, label="2.0")
    rubric_apply_template(version=draft, template="fidelity")
    rubric_text_set(version=draft, text=TEXT + "v2\n")
    client.force_login(people[Role.PI])
    body = client.get(_page(draft)).content.decode()
    assert 'name="confirmation"' not in body  # no form offered on a draft
    response = _publish(client, draft, version.protocol.code)
    assert response.status_code == 200
    assert "Only a frozen version" in response.content.decode()
    assert not RubricPublication.objects.exists()


def test_a_reviewer_or_editor_cannot_publish(client, study):
    version, _, people = study
    client.force_login(people[Role.REVIEWER])
    assert client.get(_page(version)).status_code == 404  # blind: as the rest of the page
    assert _publish(client, version, version.protocol.code).status_code == 404
    client.force_login(people[Role.EDITOR])
    body = client.get(_page(version)).content.decode()
    assert 'name="confirmation"' not in body  # the editor sees the status, not the form
    assert _publish(client, version, version.protocol.code).status_code == 403
    assert not RubricPublication.objects.exists()


def test_a_version_without_rubric_text_says_so_and_refuses_to_publish(client):
    version = ProtocolVersionFactory()
    rubric_apply_template(version=version, template="fidelity")
    _freeze_with_cards(version)
    pi = MembershipFactory(protocol=version.protocol, role=Role.PI).user
    client.force_login(pi)
    body = client.get(_page(version)).content.decode()
    assert "no rubric text yet" in body
    response = _publish(client, version, version.protocol.code)
    assert response.status_code == 200
    assert "no rubric text to publish" in response.content.decode()
