"""Automatic grants are logged like a person's (issue #18): the log is the whole history of
who held which role on a protocol."""

import pytest

from apps.accounts.models import Membership, Role
from apps.deviations.models import LogEntry
from apps.deviations.selectors import chain_verify
from apps.protocols.services import protocol_create, protocol_member_add
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_the_creators_pi_role_is_written_to_the_log():
    creator = UserFactory(username="founder")
    protocol = protocol_create(user=creator, code="LOG-1", title="Logged from the start")
    assert Membership.objects.filter(protocol=protocol, user=creator, role=Role.PI).exists()
    entries = list(LogEntry.objects.filter(protocol=protocol, kind="membership"))
    assert [(e.rationale, e.actor_name) for e in entries] == [
        ("Granted PI to founder: the protocol's creator is its first PI", "founder")
    ]
    assert entries[0].refs[0]["type"] == "membership"
    assert chain_verify(protocol=protocol).verified_through == 1


def test_a_grant_already_held_is_not_logged_twice():
    creator = UserFactory(username="founder")
    protocol = protocol_create(user=creator, code="LOG-2", title="Idempotent grants")
    protocol_member_add(protocol=protocol, username="founder", role=Role.PI, actor=creator)
    assert LogEntry.objects.filter(protocol=protocol, kind="membership").count() == 1
