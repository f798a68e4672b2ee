"""The registry's fixtures: a small frozen version (through the whole freeze gate) and its PI."""

import pytest

from apps.accounts.models import Role
from tests.factories import FrozenVersionFactory, MembershipFactory, UserFactory, build_world
from tests.states import built_once


@pytest.fixture
def frozen(db):
    """A frozen version (``version_freeze``), its author made the protocol's PI."""
    version = FrozenVersionFactory()
    MembershipFactory(protocol=version.protocol, user=version.created_by, role=Role.PI)
    return version


@pytest.fixture
def study_pi(frozen):
    return frozen.created_by


@pytest.fixture
def stranger(db):
    return UserFactory()


# -- one world of published, embargoed, withdrawn and unpublished versions, built once per module


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """``build_world()`` once for the module, rolled back at its end (``built_once``)."""
    with built_once(django_db_blocker, build_world) as built:
        yield built
