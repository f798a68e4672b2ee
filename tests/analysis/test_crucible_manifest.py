"""The CRUCIBLE battery manifest (issue #14 Deliver 1): structured data frozen with the version,
its SHA-256 shown on its page and the manifest served as a blob; other studies unchanged."""

import json

import pytest
from django.core.cache import cache

from apps.accounts.models import Role
from apps.accounts.services import membership_grant
from apps.demo.crucible import ALLOCATION, AXES, FAMILIES, crucible_draft
from apps.protocols.models import Blob
from apps.protocols.services import version_freeze
from apps.studies.crucible.manifest import crucible_manifest_bytes
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def frozen():
    cache.clear()
    pi = UserFactory()
    draft, _ = crucible_draft(user=pi, code="CRU-M")
    return version_freeze(version=draft, user=pi), pi


def test_the_manifest_is_stored_as_a_blob_at_the_freeze_and_served_by_its_hash(frozen, client):
    version, pi = frozen
    content, digest = crucible_manifest_bytes(version)
    assert Blob.objects.filter(sha256=digest).exists()
    manifest = json.loads(content)
    assert [f["code"] for f in manifest["scenario_families"]] == list(FAMILIES)
    assert manifest["scenario_families"][0]["seed_variants"] == ["F01-S1", "F01-S2", "F01-S3"]
    assert [r["code"] for r in manifest["autonomy_rungs"]] == ["R0", "R1", "R2", "R3"]
    assert "state_change" in manifest["autonomy_rungs"][2]["definition_and_action_classes"]
    assert manifest["family_axis_allocation"] == ALLOCATION
    assert manifest["graded_axes"] == list(AXES)
    assert manifest["coverage_states"] == [
        "authored",
        "ranked",
        "instrumented",
        "executed",
        "observed",
    ]
    client.force_login(pi)
    served = client.get(f"/api/v1/blob/{digest}")
    assert served.status_code == 200 and served.content == content
    page = client.get("/protocols/CRU-M/v/1.0/crucible-manifest/")
    assert page.status_code == 200 and digest in page.content.decode()
    api = client.get("/api/v1/protocols/CRU-M/versions/1.0/crucible-manifest")
    assert api.status_code == 200 and api.json()["sha256"] == digest


def test_a_reviewer_cannot_read_the_manifest_blob(frozen, client):
    version, _ = frozen
    _, digest = crucible_manifest_bytes(version)
    reviewer = UserFactory()
    membership_grant(user=reviewer, protocol_id=version.protocol_id, role=Role.REVIEWER)
    client.force_login(reviewer)
    assert client.get(f"/api/v1/blob/{digest}").status_code == 404
    assert client.get("/protocols/CRU-M/v/1.0/crucible-manifest/").status_code == 404


def test_the_design_pages_use_crucibles_words(frozen, client):
    _, pi = frozen
    client.force_login(pi)
    grid = client.get("/protocols/CRU-M/v/1.0/design/").content.decode()
    assert "Seed variants × autonomy rungs" in grid and "Scenario families" in grid
    assert "Autonomy rungs" in client.get("/protocols/CRU-M/v/1.0/design/levels/").content.decode()


def test_the_item_and_cell_pages_and_the_api_use_crucibles_words(frozen, client):
    _, pi = frozen
    client.force_login(pi)
    item = client.get("/protocols/CRU-M/v/1.0/design/items/F01-S1/").content.decode()
    assert "<h1>Seed variant F01-S1</h1>" in item
    assert "Scenario family F01" in item and ">Autonomy rung</th>" in item
    cell = client.get("/protocols/CRU-M/v/1.0/design/items/F01-S1/cells/R2/").content.decode()
    assert "Seed variant F01-S1 at autonomy rung R2" in cell
    version = client.get("/api/v1/protocols/CRU-M/versions/1.0").json()
    assert version["vocabulary"]["level"] == "autonomy rung"
    assert version["vocabulary"]["item"] == "seed variant"
    assert version["vocabulary"]["administration"] == "episode"


def test_other_studies_keep_the_generic_words(client):
    from tests.factories import MembershipFactory, build_draft

    membership = MembershipFactory(role="pi")
    draft = build_draft(protocol=membership.protocol, user=membership.user)
    client.force_login(membership.user)
    base = f"/protocols/{draft.protocol.code}/v/{draft.label}/design/items"
    item = draft.items.order_by("code").first()
    level = item.cells.select_related("level").first().level
    page = client.get(f"{base}/{item.code}/").content.decode()
    assert f"<h1>Item {item.code}</h1>" in page and ">Level</th>" in page
    cell = client.get(f"{base}/{item.code}/cells/{level.code}/").content.decode()
    assert f"Item {item.code} at {level.code}" in cell
    api = client.get(f"/api/v1/protocols/{draft.protocol.code}/versions/{draft.label}").json()
    assert api["vocabulary"]["level"] == "level"
