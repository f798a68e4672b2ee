"""Frozen rows checked against their hash (issue #18, "Why" 1, second half).

The hostile test changed a frozen parameter (ε 0.1 → 0.45) with the guards switched off, and the
analysis ran under the original frozen SHA-256. Now: the analysis refuses to run, the version's
page shows an integrity alarm, and one deviation-log entry records it.
"""

from unittest import mock

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from apps.analysis.models import AnalysisRun, RunState
from apps.analysis.services import analysis_run_perform, analysis_run_request
from apps.deviations.models import EntryKind, LogEntry
from apps.deviations.selectors import chain_verify
from apps.protocols import components
from apps.protocols.integrity import IntegrityAlarm, version_integrity_verify
from apps.protocols.models import AnalysisParameter, Protocol
from tests.dbroles import owner_cursor
from tests.factories import opb_study


@pytest.fixture(autouse=True)
def isolated_components():
    """Every component as the apps registered it, not this app's empty registry (conftest): the
    tampered studies are whole OPB studies, frozen through the whole gate (``opb_study``)."""
    return components


EPSILON = (
    "UPDATE protocols_analysisparameter SET value = '0.45' "
    "WHERE version_id = %s AND name = 'epsilon'"
)


def tamper_epsilon(version) -> None:
    """As the owner on PostgreSQL (as an attacker with the migration credentials would: switch
    the frozen-version guard off, rewrite ε, switch it on); plain SQL on SQLite (no triggers)."""
    if connection.vendor == "postgresql":
        with owner_cursor() as cursor:
            cursor.execute("ALTER TABLE protocols_analysisparameter DISABLE TRIGGER USER")
            cursor.execute(EPSILON, [version.pk])
            assert cursor.rowcount == 1
            cursor.execute("ALTER TABLE protocols_analysisparameter ENABLE TRIGGER USER")
    else:
        with connection.cursor() as cursor:
            cursor.execute(EPSILON, [version.pk])
    assert AnalysisParameter.objects.get(version=version, name="epsilon").value == "0.45"


def _alarms(version) -> list[LogEntry]:
    return list(
        LogEntry.objects.filter(protocol_id=version.protocol_id, kind=EntryKind.INTEGRITY_ALARM)
    )


def _page(client, version) -> str:
    url = f"/protocols/{version.protocol.code}/v/{version.label}/"
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def _tampered_study_sees_all_three(client, study) -> None:
    version = study.version
    assert version_integrity_verify(version=version).ok
    client.force_login(study.pi)
    assert "Integrity alarm" not in _page(client, version)
    with mock.patch("apps.analysis.services._enqueue"):  # queued before the tamper, run after
        queued = analysis_run_request(version=version, user=study.pi)

    tamper_epsilon(version)

    # 1. the analysis refuses to run: a new request, and the run queued before the tamper
    with pytest.raises(IntegrityAlarm) as refused:
        analysis_run_request(version=version, user=study.pi)
    assert isinstance(refused.value, ValidationError)
    assert "Integrity alarm" in str(refused.value.message_dict["version"])
    assert analysis_run_perform(run_id=queued.pk) == "failed"
    queued.refresh_from_db()
    assert queued.state == RunState.FAILED and "Integrity alarm" in queued.error
    assert not AnalysisRun.objects.filter(version=version, state=RunState.SUCCEEDED).exists()

    # 2. the version page shows the alarm, with the frozen and the recomputed hash
    verdict = version_integrity_verify(version=version)
    assert not verdict.ok and verdict.stored == version.sha256 != verdict.recomputed
    page = _page(client, version)
    assert "Integrity alarm" in page and verdict.recomputed in page
    api = client.get(f"/api/v1/protocols/{version.protocol.code}/versions/{version.label}").json()
    assert api["integrity"]["ok"] is False
    assert api["integrity"]["recomputed_sha256"] == verdict.recomputed

    # 3. one deviation-log entry, however often the page is seen, and the chain still holds
    _page(client, version)
    (alarm,) = _alarms(version)
    assert alarm.actor_name == "system"
    assert verdict.recomputed in alarm.rationale
    assert {"type": "integrity", "id": verdict.recomputed, "label": "recomputed hash"} in alarm.refs
    assert chain_verify(protocol=version.protocol).ok


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_frozen_parameter_changed_by_the_owner_is_caught_three_ways(client):
    _tampered_study_sees_all_three(client, opb_study(evaluands=1))


@pytest.mark.django_db
def test_a_frozen_parameter_changed_on_sqlite_is_caught_three_ways(client):
    if connection.vendor == "postgresql":
        pytest.skip("the PostgreSQL test tampers as the owner")
    _tampered_study_sees_all_three(client, opb_study(evaluands=1))


@pytest.mark.postgres
@pytest.mark.django_db
def test_pages_reuse_a_verdict_only_while_the_rows_are_unchanged():
    study = opb_study(evaluands=1)
    version = study.version
    assert version_integrity_verify(version=version, use_cache=True).ok
    with CaptureQueriesContext(connection) as cached:
        assert version_integrity_verify(version=version, use_cache=True).ok
    assert len(cached.captured_queries) == 1  # the fingerprint: no rebuild of the document
    # Any write to a row the document is built from, by anyone, changes the fingerprint (here
    # the protocol row, rewritten with the same values: a new row version all the same).
    Protocol.objects.filter(pk=version.protocol_id).update(created_at=F("created_at"))
    with CaptureQueriesContext(connection) as rebuilt:
        assert version_integrity_verify(version=version, use_cache=True).ok
    rebuilt_sql = [query["sql"] for query in rebuilt.captured_queries]
    assert any("protocols_blob" in sql for sql in rebuilt_sql)  # rebuilt and compared
    assert any("deviations_logentry" in sql for sql in rebuilt_sql)  # and the log checked


# The consistent rewrite (issue #33, "Why" 1): ε rewritten, the rewritten document stored as a
# blob and the version's sha256 pointed at it. Rows, blob and sha256 agree with each other; only
# the freeze entry in the deviation log still names the frozen hash.

REPOINT = "UPDATE protocols_protocolversion SET sha256 = %s WHERE id = %s"
BLOB = (
    "INSERT INTO protocols_blob (sha256, content, media_type, size, created_at) "
    "VALUES (%s, %s, 'application/json', %s, now())"
)
REWRITE_EPSILON = (
    "UPDATE protocols_analysisparameter SET value = '0.30' "
    "WHERE version_id = %s AND name = 'epsilon'"
)


def _rewritten_document(version) -> tuple[bytes, str]:
    from apps.protocols.documents import version_document_bytes

    version = type(version).objects.get(pk=version.pk)
    return version_document_bytes(version=version)


def consistent_rewrite(version) -> str:
    """As the owner on PostgreSQL (guards switched off for the two tables), plain SQL on SQLite.
    Returns the hash the version now claims."""
    if connection.vendor == "postgresql":
        with owner_cursor() as cursor:
            for table in ("protocols_analysisparameter", "protocols_protocolversion"):
                cursor.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
            cursor.execute(REWRITE_EPSILON, [version.pk])
        content, digest = _rewritten_document(version)
        with owner_cursor() as cursor:
            cursor.execute(BLOB, [digest, content, len(content)])
            cursor.execute(REPOINT, [digest, version.pk])
            for table in ("protocols_analysisparameter", "protocols_protocolversion"):
                cursor.execute(f"ALTER TABLE {table} ENABLE TRIGGER USER")
    else:
        with connection.cursor() as cursor:
            cursor.execute(REWRITE_EPSILON, [version.pk])
        content, digest = _rewritten_document(version)
        with connection.cursor() as cursor:
            cursor.execute(
                BLOB.replace("now()", "CURRENT_TIMESTAMP"), [digest, content, len(content)]
            )
            cursor.execute(REPOINT, [digest, version.pk])
    return digest


def _consistent_rewrite_is_caught(client, study) -> None:
    version = study.version
    frozen = version.sha256
    client.force_login(study.pi)
    digest = consistent_rewrite(version)
    version.refresh_from_db()
    assert version.sha256 == digest != frozen
    assert AnalysisParameter.objects.get(version=version, name="epsilon").value == "0.30"

    # rows, blob and sha256 agree: only the log's freeze entry tells the rewrite
    verdict = version_integrity_verify(version=version)
    assert not verdict.ok and verdict.recomputed == verdict.stored == digest
    assert frozen in verdict.reason and "repointed" in verdict.reason

    with pytest.raises(IntegrityAlarm, match="The analysis is refused"):
        analysis_run_request(version=version, user=study.pi)
    assert not AnalysisRun.objects.filter(version=version).exists()
    page = _page(client, version)
    assert "Integrity alarm" in page and "repointed" in page
    export = client.get(f"/protocols/{version.protocol.code}/v/{version.label}/design/export.csv")
    assert export.status_code == 409 and b"Integrity alarm" in export.content
    assert b"Not exported." in export.content
    (alarm,) = _alarms(version)
    assert frozen in alarm.rationale and digest in alarm.rationale


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_consistent_rewrite_by_the_owner_is_caught_by_the_freeze_entry(client):
    _consistent_rewrite_is_caught(client, opb_study(evaluands=1))


@pytest.mark.django_db
def test_a_consistent_rewrite_on_sqlite_is_caught_by_the_freeze_entry(client):
    if connection.vendor == "postgresql":
        pytest.skip("the PostgreSQL test rewrites as the owner")
    _consistent_rewrite_is_caught(client, opb_study(evaluands=1))


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_runtime_role_cannot_make_the_consistent_rewrite():
    from tests.dbroles import assert_sql_refused

    version = opb_study(evaluands=1).version
    assert_sql_refused(REWRITE_EPSILON, [version.pk])
    assert_sql_refused(REPOINT, ["b" * 64, version.pk])
    assert version_integrity_verify(version=version).ok


@pytest.mark.django_db
def test_a_frozen_version_turned_back_into_a_draft_raises_the_alarm():
    """Issue #33: flipping a frozen version back to draft switched the check off. The row now
    refuses it on PostgreSQL (tests/core/test_guard_shadowing.py); whoever gets past that still
    meets the freeze entry in the log."""
    if connection.vendor == "postgresql":
        pytest.skip("the state trigger refuses it on PostgreSQL")
    version = opb_study(evaluands=1).version
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE protocols_protocolversion SET state = 'draft' WHERE id = %s", [version.pk]
        )
    version.refresh_from_db()
    verdict = version_integrity_verify(version=version)
    assert verdict.checked and not verdict.ok and "says it is a draft" in verdict.reason
    (alarm,) = _alarms(version)
    assert version.sha256 in alarm.rationale
