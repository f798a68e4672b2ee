"""Fixtures for the design tests: a draft version with OPB-01's scale and families A and B."""

import pytest

from apps.items import services
from tests.factories import MembershipFactory, ProtocolVersionFactory

B_RULE = "No Family B item is authored at L4 or L5, ever."


@pytest.fixture
def draft(protocol):
    return ProtocolVersionFactory(protocol=protocol)


@pytest.fixture
def scale(draft):
    return {level.code: level for level in services.level_scale_default_create(version=draft)}


@pytest.fixture
def family_a(draft, scale):
    return services.family_create(version=draft, code="A", name="Benign", role="harm_constant")


@pytest.fixture
def family_b(draft, scale):
    return services.family_create(
        version=draft,
        code="B",
        name="Discrimination control",
        role="discrimination_control",
        max_level="L3",
        stopping_rule=B_RULE,
    )


@pytest.fixture
def blind_reviewers(protocol):
    """Three reviewers with no other role on the protocol, by username order."""
    return [
        MembershipFactory(protocol=protocol, role="reviewer", user__username=f"rev-{n}").user
        for n in (1, 2, 3)
    ]


def pages(version) -> str:
    """Where a version's design pages live."""
    return f"/protocols/{version.protocol.code}/v/{version.label}/design"


def api(version) -> str:
    """Where a version's design endpoints live."""
    return f"/api/v1/protocols/{version.protocol.code}/versions/{version.label}/design"
