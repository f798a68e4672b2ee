"""Seed 003's rubric text at its own content address: members only until the PI publishes it,
then anyone, signed in or not; the served bytes hash to the address."""

import hashlib
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from apps.accounts.models import Role
from apps.deviations.models import LogEntry
from apps.raters.services.rubric_text import rubric_text_publish, rubric_text_set
from tests.factories import MembershipFactory, ProtocolVersionFactory, UserFactory, freeze

pytestmark = pytest.mark.django_db

SEED = Path("/work/shared/seeds/003_b819a89a4f74db5b.txt")
TEXT = (
    SEED.read_text(encoding="utf-8")
    if SEED.exists()
    else "# injection-fidelity (loss-1)\n\nYou judge ONE sample.\n"
)


@pytest.fixture
def rubric():
    version = ProtocolVersionFactory()
    row = rubric_text_set(version=version, text=TEXT)
    freeze(version)
    people = {
        role: MembershipFactory(protocol=version.protocol, role=role).user
        for role in (Role.PI, Role.REVIEWER)
    }
    return version, row.sha256, people


def _get(client, digest):
    return client.get(f"/api/v1/blob/{digest}")


def test_the_served_bytes_hash_to_the_address_by_full_hash_and_16_hex_prefix(client, rubric):
    _, digest, people = rubric
    client.force_login(people[Role.PI])
    for address in (digest, digest[:16]):
        response = _get(client, address)
        assert response.status_code == 200
        assert hashlib.sha256(response.content).hexdigest() == digest
        assert response.content.decode("utf-8") == TEXT
        assert response["Content-Type"] == "text/markdown; charset=utf-8"


def test_before_publication_members_read_it_and_everyone_else_gets_404(client, rubric):
    _, digest, people = rubric
    assert _get(client, digest[:16]).status_code == 404  # anonymous
    client.force_login(UserFactory())
    assert _get(client, digest).status_code == 404  # a stranger
    client.force_login(people[Role.REVIEWER])
    assert _get(client, digest).status_code == 200  # a member


def test_once_the_pi_publishes_it_anyone_reads_it_without_signing_in(client, rubric):
    version, digest, people = rubric
    entries = LogEntry.objects.count()
    rubric_text_publish(version=version, user=people[Role.PI])
    assert LogEntry.objects.count() == entries + 1
    assert LogEntry.objects.order_by("-pk").first().kind == "publication"
    response = _get(client, digest[:16])
    assert response.status_code == 200
    assert hashlib.sha256(response.content).hexdigest() == digest
    # Publishing again is a no-op, not a second entry.
    rubric_text_publish(version=version, user=people[Role.PI])
    assert LogEntry.objects.count() == entries + 1


def test_only_the_pi_publishes_and_only_a_frozen_rubric(client, rubric):
    version, _, people = rubric
    # Who may publish is the API's and the page's to check; the service checks the version.
    url = f"/api/v1/protocols/{version.protocol.code}/versions/{version.label}/rubric/text/publish"
    page = reverse("raters:rubric-text-publish", args=[version.protocol.code, version.label])
    editor = MembershipFactory(protocol=version.protocol, role=Role.EDITOR).user
    for user, status in ((people[Role.REVIEWER], 404), (editor, 403)):
        client.force_login(user)
        assert client.post(url).status_code == status
        assert client.post(page, {"code": version.protocol.code}).status_code == status
    assert not LogEntry.objects.filter(kind="publication").exists()
    client.force_login(people[Role.PI])
    assert client.post(url).status_code == 201
    assert LogEntry.objects.filter(kind="publication").count() == 1
    draft = ProtocolVersionFactory(protocol=version.protocol, label="2.0")
    rubric_text_set(version=draft, text="a draft's rubric")
    with pytest.raises(ValidationError):
        rubric_text_publish(version=draft, user=people[Role.PI])


def test_a_frozen_rubric_text_cannot_change(rubric):
    version, _, _ = rubric
    with pytest.raises(ValidationError):
        rubric_text_set(version=version, text="another text")


def test_the_fidelity_rubric_document_freezes_the_text_hash_and_the_schema():
    from apps.raters.selectors import rubric_document
    from apps.raters.services import rubric_apply_template
    from apps.studies.fidelity.verdicts import loss1_schema

    version = ProtocolVersionFactory()
    rubric_apply_template(version=version, template="fidelity")
    row = rubric_text_set(version=version, text=TEXT)
    document = rubric_document(version)
    assert document["text_sha256"] == row.sha256
    assert document["loss1_schema"] == loss1_schema()


def test_the_pi_sets_and_publishes_the_text_through_the_api_by_code_and_label(client):
    import json

    version = ProtocolVersionFactory()
    pi = MembershipFactory(protocol=version.protocol, role=Role.PI).user
    reviewer = MembershipFactory(protocol=version.protocol, role=Role.REVIEWER).user
    base = f"/api/v1/protocols/{version.protocol.code}/versions/{version.label}/rubric/text"
    client.force_login(reviewer)
    refused = client.put(base, data=json.dumps({"text": TEXT}), content_type="application/json")
    assert refused.status_code in (403, 404)
    client.force_login(pi)
    stored = client.put(base, data=json.dumps({"text": TEXT}), content_type="application/json")
    assert stored.status_code == 200
    digest = stored.json()["sha256"]
    assert digest == hashlib.sha256(TEXT.encode()).hexdigest()
    early = client.post(f"{base}/publish")
    assert early.status_code == 400  # a draft's rubric is not published
    freeze(version)
    published = client.post(f"{base}/publish")
    assert published.status_code == 201
    client.logout()
    served = client.get(published.json()["short_url"])
    assert served.status_code == 200
    assert hashlib.sha256(served.content).hexdigest() == digest


def test_the_seeds_rubric_is_served_at_the_address_its_header_names(client):
    # Seed 003's header: "Immutable. This exact content is served forever at
    # /api/v1/blob/fdbd589de2a04a46." The content is the rubric below the header (from its
    # front matter's "---" on, ending in a newline); stored as a version's rubric text and
    # published, it must answer at exactly that address.
    if not SEED.exists():
        pytest.skip(f"seed 003 is absent from {SEED.parent}")
    text = SEED.read_text(encoding="utf-8")
    address = text.split("served forever at /api/v1/blob/", 1)[1].split(".", 1)[0]
    content = text[text.index("---\n") :].rstrip() + "\n"
    version = ProtocolVersionFactory()
    pi = MembershipFactory(protocol=version.protocol, role=Role.PI).user
    rubric_text_set(version=version, text=content)
    freeze(version)
    rubric_text_publish(version=version, user=pi)
    response = _get(client, address)  # anonymous: published
    assert response.status_code == 200
    assert hashlib.sha256(response.content).hexdigest().startswith(address)
