"""The registry's fixtures: a small frozen version (through the whole freeze gate) and its PI."""

import pytest
from django.db import transaction

from apps.accounts.models import Role
from tests.factories import FrozenVersionFactory, MembershipFactory, UserFactory, build_world


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
    """``build_world()`` once for the module, inside a transaction rolled back at its end (each
    test's own transaction nests inside it as a savepoint)."""
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            yield build_world()
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
