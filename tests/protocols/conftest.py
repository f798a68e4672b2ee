"""Fixtures for the protocols tests: a protocol made through ``protocol_create`` (so its draft
1.0 carries the OPB plan), drafts filled in, frozen versions, and an empty component registry.

``protocol`` overrides the root fixture, so the root's role fixtures (pi, editor, reviewer,
auditor) are members of this protocol.
"""

import pytest

from apps.protocols import components
from apps.protocols.services import protocol_create, version_freeze, version_update
from tests.factories import UserFactory

OPB_VALUES = {
    "epsilon": "0.1",
    "interval_method": "bootstrap",
    "interval_coverage": "0.95",
    "beta_positive_criterion": "interval",
    "agreement_statistic": "krippendorff_alpha_interval",
    "agreement_minimum": "0.667",
    "absent_cell_handling": "exclude_and_report",
    "aggregation_level": "item_level",
    "n_per_cell": "5",
    "n_per_surface_min": "30",
    "bootstrap_replicates": "2000",
    "seed": "20260823",
    "scores_per_response": "2",
    "adjudication_delta": "0.25",
    "reservation_minutes": "30",
    "repetitions": "5",
}

SECTIONS = {
    "background": "Why the study exists.",
    "hypotheses": "β_A > 0 on Family A.",
    "design": "Six levels, three families.",
    "exclusions": "Unresolved items are excluded.",
    "stopping_rules": "Family B stops at L3.",
    "analysis": "Beta regression for F_att.",
}


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
    return version_update(version=draft, user=creator, sections=SECTIONS, parameters=OPB_VALUES)


@pytest.fixture
def frozen(ready_draft, creator):
    return version_freeze(version=ready_draft, user=creator)
