"""Fixtures for the protocols tests: a protocol made through ``protocol_create`` (so its draft
1.0 carries the OPB plan), drafts filled in, frozen versions, and an empty component registry.

``protocol`` overrides the root fixture, so the root's role fixtures (pi, editor, reviewer,
auditor) are members of this protocol.
"""

import pytest

from apps.protocols import components
from apps.protocols.services import protocol_create, version_freeze, version_update
from tests.factories import OPB_SECTIONS, OPB_VALUES, UserFactory


@pytest.fixture(autouse=True)
def isolated_components(monkeypatch):
    """An empty VersionComponent registry for each test: this app's behaviour on its own,
    whatever other apps register once integrated. Tests register what they need."""
    monkeypatch.setattr(components, "_components", {})
    return components


@pytest.fixture
def creator(db):
    return UserFactory()


@pytest.fixture
def protocol(creator):
    return protocol_create(user=creator, code="OPB-T", title="Operativity test", template="opb")


@pytest.fixture
def draft(protocol):
    return protocol.versions.get(label="1.0")


@pytest.fixture
def ready_draft(draft, creator):
    return version_update(version=draft, user=creator, sections=OPB_SECTIONS, parameters=OPB_VALUES)


@pytest.fixture
def frozen(ready_draft, creator):
    return version_freeze(version=ready_draft, user=creator)
