"""An entry carries the protocol code it was written under; the chain never reads the live
protocol row, and the code cannot change once it matters (issue #18, "Why" 2)."""

import pytest
from django.db import DatabaseError, transaction

from apps.deviations.selectors import chain_verify, entry_dicts
from apps.protocols.admin import code_is_frozen
from apps.protocols.models import Protocol
from tests.dbroles import owner_cursor, refused_by_database
from tests.factories import UserFactory


@pytest.mark.django_db
def test_each_entry_stores_the_code_it_was_written_under(protocol, append):
    entries = append(protocol, 2)
    assert [entry.protocol_code for entry in entries] == [protocol.code] * 2
    assert {entry["protocol"] for entry in entry_dicts(protocol=protocol)} == {protocol.code}


@pytest.mark.django_db
def test_a_protocol_without_a_log_or_a_frozen_version_may_still_be_renamed(protocol):
    assert not code_is_frozen(protocol)
    Protocol.objects.filter(pk=protocol.pk).update(code="RENAMED-1")
    protocol.refresh_from_db()
    assert protocol.code == "RENAMED-1"


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_database_refuses_to_rename_a_protocol_that_has_a_log(protocol, append):
    append(protocol, 1)
    with pytest.raises(DatabaseError) as error, transaction.atomic():
        Protocol.objects.filter(pk=protocol.pk).update(code="RENAMED-1")
    assert refused_by_database(str(error.value))
    assert "cannot change" in str(error.value)


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_database_refuses_to_rename_a_protocol_with_a_frozen_version(frozen_version):
    protocol = frozen_version.protocol
    with (
        pytest.raises(DatabaseError, match="preregistry: the code of protocol"),
        transaction.atomic(),
    ):
        Protocol.objects.filter(pk=protocol.pk).update(code="RENAMED-1")
    # the title is in the frozen document: it is frozen too
    with (
        pytest.raises(DatabaseError, match="preregistry: the title and template"),
        transaction.atomic(),
    ):
        Protocol.objects.filter(pk=protocol.pk).update(title="A better title")


@pytest.mark.django_db
def test_the_admin_shows_the_code_read_only_once_the_protocol_has_a_log(client, protocol, append):
    admin = UserFactory(is_staff=True, is_superuser=True)
    client.force_login(admin)
    url = f"/admin/protocols/protocol/{protocol.pk}/change/"
    assert b'name="code"' in client.get(url).content
    append(protocol, 1)
    page = client.get(url).content
    assert b'name="code"' not in page
    assert protocol.code.encode() in page
    client.post(url, {"code": "RENAMED-1", "title": "t", "template": protocol.template})
    protocol.refresh_from_db()
    assert protocol.code != "RENAMED-1"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_rename_by_the_owner_with_the_guard_off_no_longer_breaks_the_chain(protocol, append):
    """The false alarm of "Why" 2: renaming broke the chain at entry 1 because entries were
    hashed with the live code. Now the chain verifies under the code it was written with, and
    the next entry continues it under that code."""
    append(protocol, 3)
    old_code = protocol.code
    with owner_cursor() as cursor:
        cursor.execute("ALTER TABLE protocols_protocol DISABLE TRIGGER USER")
        cursor.execute(
            "UPDATE protocols_protocol SET code = 'RENAMED-1' WHERE id = %s", [protocol.pk]
        )
        cursor.execute("ALTER TABLE protocols_protocol ENABLE TRIGGER USER")
    protocol.refresh_from_db()
    assert protocol.code == "RENAMED-1"
    report = chain_verify(protocol=protocol)
    assert report.ok, report.summary()
    assert (report.protocol, report.verified_through) == (old_code, 3)
    (entry,) = append(protocol, 1)
    assert entry.protocol_code == old_code
    assert chain_verify(protocol=protocol).verified_through == 4
