"""Frozen is frozen: every path that could change a frozen version, or a row that belongs to it,
is refused — services and the API everywhere, the admin everywhere, and on PostgreSQL the ORM's
bulk paths and raw SQL too, by the database's triggers. After every attempt the version still
gives exactly the bytes that were hashed."""

import json

import pytest
from django.db import DatabaseError, connection, transaction

from apps.protocols.documents import version_document_bytes
from apps.protocols.models import AnalysisParameter, Blob, ProtocolVersion, Withdrawal
from apps.protocols.services import (
    VersionStateError,
    version_freeze,
    version_update,
    version_withdraw,
)
from tests.dbroles import refused_by_database
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


def _unchanged(version):
    version = ProtocolVersion.objects.get(pk=version.pk)
    content, digest = version_document_bytes(version=version)
    assert digest == version.sha256
    assert content == bytes(Blob.objects.get(sha256=digest).content)
    assert version.state == "frozen"


# Services and API: refused on every database.


def test_services_refuse_to_edit_a_frozen_version(frozen, creator):
    for change in (
        {"sections": {"design": "rewritten"}},
        {"parameters": {"epsilon": "0.5"}},
        {"decision_table": []},
    ):
        with pytest.raises(VersionStateError, match="is frozen and cannot change"):
            version_update(version=frozen, user=creator, **change)
    with pytest.raises(VersionStateError):
        version_freeze(version=frozen, user=creator)
    _unchanged(frozen)


def test_the_api_answers_409_to_edits_of_a_frozen_version(client, frozen, creator):
    client.force_login(creator)
    url = "/api/v1/protocols/OPB-T/versions/1.0"
    response = client.patch(
        url,
        json.dumps({"parameters": {"epsilon": "0.5"}}),
        content_type="application/json",
    )
    assert response.status_code == 409
    assert "is frozen and cannot change" in response.json()["detail"]
    assert client.post(f"{url}/freeze").status_code == 409
    _unchanged(frozen)


def test_the_admin_offers_no_way_to_change_or_delete(client, frozen):
    admin = UserFactory(is_staff=True, is_superuser=True)
    client.force_login(admin)
    parameter = frozen.parameters.get(name="epsilon")
    for url in (
        f"/admin/protocols/protocolversion/{frozen.pk}/change/",
        f"/admin/protocols/protocolversion/{frozen.pk}/delete/",
        f"/admin/protocols/analysisparameter/{parameter.pk}/change/",
        f"/admin/protocols/analysisparameter/{parameter.pk}/delete/",
        f"/admin/protocols/blob/{frozen.sha256}/delete/",
    ):
        response = client.post(url, {"value": "0.5", "hypotheses": "x", "post": "yes"})
        assert response.status_code == 403, url
    page = client.get(f"/admin/protocols/protocolversion/{frozen.pk}/change/")
    assert page.status_code == 200  # readable
    assert b'name="_save"' not in page.content
    _unchanged(frozen)


# PostgreSQL: the database itself refuses what the code never does.


def _refused(operation):
    with pytest.raises(DatabaseError) as error, transaction.atomic():
        operation()
    assert refused_by_database(str(error.value)), error.value


def _sql(statement, params=()):
    def run():
        with connection.cursor() as cursor:
            cursor.execute(statement, params)

    return run


@pytest.mark.postgres
def test_bulk_orm_writes_to_a_frozen_version_are_refused(frozen):
    versions = ProtocolVersion.objects.filter(pk=frozen.pk)
    parameters = AnalysisParameter.objects.filter(version=frozen)
    _refused(lambda: versions.update(hypotheses="rewritten"))
    _refused(lambda: versions.update(state="draft", sha256=""))
    _refused(lambda: versions.delete())
    _refused(lambda: parameters.filter(name="epsilon").update(value="0.5"))
    _refused(lambda: parameters.delete())
    _refused(
        lambda: AnalysisParameter.objects.create(
            version=frozen, name="extra", label="extra", kind="text", value="x"
        )
    )
    parameter = parameters.get(name="epsilon")
    parameter.value = "0.5"
    _refused(parameter.save)
    frozen.design = "rewritten"
    _refused(frozen.save)
    _unchanged(frozen)


@pytest.mark.postgres
def test_raw_sql_against_a_frozen_version_is_refused(frozen):
    pk = frozen.pk
    _refused(_sql("UPDATE protocols_protocolversion SET design = 'x' WHERE id = %s", [pk]))
    _refused(_sql("UPDATE protocols_protocolversion SET state = 'draft' WHERE id = %s", [pk]))
    _refused(_sql("DELETE FROM protocols_protocolversion WHERE id = %s", [pk]))
    _refused(_sql("UPDATE protocols_analysisparameter SET value = '9' WHERE version_id = %s", [pk]))
    _refused(_sql("DELETE FROM protocols_analysisparameter WHERE version_id = %s", [pk]))
    _refused(
        _sql(
            "INSERT INTO protocols_analysisparameter (version_id, name, label, kind, value, unit,"
            " required, choices, help_text, position) VALUES (%s, 'x', 'x', 'text', 'x', '',"
            " false, '[]', '', 99)",
            [pk],
        )
    )
    # Fire the test transaction's deferred foreign-key checks first: PostgreSQL will not
    # TRUNCATE a table with pending trigger events, which would hide the guard's own refusal.
    _sql("SET CONSTRAINTS ALL IMMEDIATE")()
    _refused(_sql("TRUNCATE protocols_analysisparameter CASCADE"))
    _unchanged(frozen)


@pytest.mark.postgres
def test_blobs_withdrawals_and_edit_history_are_append_only(frozen, creator):
    version_withdraw(version=frozen, user=creator, reason="flawed")
    digest = frozen.sha256
    _refused(_sql("UPDATE protocols_blob SET content = 'x' WHERE sha256 = %s", [digest]))
    _refused(_sql("DELETE FROM protocols_blob WHERE sha256 = %s", [digest]))
    _refused(lambda: Blob.objects.filter(sha256=digest).update(size=1))
    _refused(lambda: Withdrawal.objects.filter(version=frozen).update(reason="other"))
    _refused(lambda: Withdrawal.objects.filter(version=frozen).delete())
    _refused(lambda: frozen.history.update(design="rewritten"))
    _refused(_sql("DELETE FROM protocols_historicalanalysisparameter"))
    _unchanged(frozen)


@pytest.mark.postgres
def test_a_draft_is_still_writable_by_the_same_paths(ready_draft):
    # The guard is about frozen versions: drafts change freely (and keep their history).
    ProtocolVersion.objects.filter(pk=ready_draft.pk).update(design="bulk")
    AnalysisParameter.objects.filter(version=ready_draft, name="seed").update(value="7")
    ready_draft.refresh_from_db()
    assert ready_draft.design == "bulk"


@pytest.mark.postgres
def test_a_guard_refusal_reaches_the_api_as_409_not_500(client, frozen, creator):
    MembershipFactory(user=creator, protocol=frozen.protocol, role="editor")
    client.force_login(creator)
    # Simulate a write path that forgets to check the state: the trigger is the last line.
    from unittest import mock

    from apps.protocols import services

    @transaction.atomic  # as every service is
    def careless_update(*, version, user, **changes):
        ProtocolVersion.objects.filter(pk=version.pk).update(design="careless")
        return version

    with mock.patch.object(services, "version_update", careless_update):
        response = client.patch(
            "/api/v1/protocols/OPB-T/versions/1.0",
            json.dumps({"sections": {"design": "careless"}}),
            content_type="application/json",
        )
    assert response.status_code == 409
    assert "the protocol version is frozen" in response.json()["detail"]
    _unchanged(frozen)
