"""The registry's fixtures: a small frozen version (through the whole freeze gate) and its PI."""

from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.db import transaction

from apps.accounts.models import Role
from apps.protocols.services import version_amend, version_withdraw
from apps.registry.services import today_utc, version_publish
from tests.builders import FrozenVersionFactory, freeze
from tests.factories import MembershipFactory, ProtocolFactory, UserFactory


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


@dataclass
class World:
    pi: object
    v10: object  # REG-01 v1.0, public, superseded by v1.1
    v11: object  # REG-01 v1.1, public (an amendment)
    v12: object  # REG-01 v1.2, frozen, never published
    embargoed: object  # REG-02 v1.0, published under embargo
    tombstone: object  # REG-03 v1.0, published, then withdrawn
    private: object  # REG-04 v1.0, frozen, never published


def _amend(version, pi, rationale):
    draft = version_amend(version=version, user=pi)
    draft.amendment_rationale = rationale
    draft.save()
    return freeze(draft, pi)


def build_world() -> World:
    pi = UserFactory(first_name="Ada", last_name="Lovelace")

    def frozen_of(code, title):
        version = FrozenVersionFactory(
            protocol=ProtocolFactory(code=code, title=title, created_by=pi), created_by=pi
        )
        MembershipFactory(protocol=version.protocol, user=pi, role=Role.PI)
        return version

    authors = "Ada Lovelace (Analytical Institute)"
    v10 = frozen_of("REG-01", "Registry study")
    version_publish(version=v10, user=pi, authors=authors)
    v11 = _amend(v10, pi, "The key gained a unit.")
    version_publish(version=v11, user=pi, authors=authors)
    v12 = _amend(v11, pi, "A later change, not yet public.")
    embargoed = frozen_of("REG-02", "Embargoed study")
    version_publish(
        version=embargoed,
        user=pi,
        authors=authors,
        embargo_until=today_utc() + timedelta(days=60),
    )
    tombstone = frozen_of("REG-03", "Withdrawn study")
    version_publish(version=tombstone, user=pi, authors=authors)
    version_withdraw(version=tombstone, user=pi, reason="The scoring key was wrong.")
    private = frozen_of("REG-04", "Private study")
    return World(pi, v10, v11, v12, embargoed, tombstone, private)


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
