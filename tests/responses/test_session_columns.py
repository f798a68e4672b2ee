"""Seed 002's typed session columns, stored beside each attempt by the importer.

Imported in the attempt's own batch from the route demo's archive shape, equal to what the one
extractor (``sessions.session_record``) reads from the verbatim record, shown on the attempt page
and in the API to the PI and auditor (never to reviewers), read by the analysis instead of the
archive, backfilled for attempts imported before they were stored, and append-only in
PostgreSQL like the attempt."""

import json

import numpy as np
import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction

from apps.analysis.inputs import task_blocks
from apps.analysis.pipelines.base import PlanInputError
from apps.demo.route_choice import _session
from apps.responses.importing import ImportRejected
from apps.responses.models import Administration, Attempt, SessionColumns
from apps.responses.services import responses_import, session_columns_backfill
from apps.responses.sessions import SESSION_FIELDS, session_record
from apps.studies.paired_blocks import pipeline as paired_blocks
from tests.dbroles import refused_by_database
from tests.factories import SESSION_MAPPING, MembershipFactory, frozen_route_version

pytestmark = pytest.mark.django_db

MAPPING = SESSION_MAPPING


@pytest.fixture
def frozen():
    return frozen_route_version("ROUTE-S")


def _block(version, *, fail_first: str | None = None) -> list[dict]:
    """One whole task block of A-01 for model-1, as the route demo writes its archives; the
    first session optionally an infrastructure failure of stratum ``fail_first``."""
    rng = np.random.default_rng(5)
    adms = (
        Administration.objects.filter(
            version=version, cell__item__code="A-01", evaluand__rosters__code="model-1"
        )
        .select_related("cell__item")
        .order_by("repetition")[:8]
    )
    records = [_session(a, rng, a.cell.expected_output) for a in adms]
    if fail_first:
        first = records[0]
        first["metadata"]["infrastructure_failure"] = fail_first
        first["terminal_outcome"] = "platform_loss"
        first["output"] = {"completion": ""}
        first["error"] = {"message": "transport failure"}
        first["messages"] = first["messages"][:2]
    return records


def _import(version, pi, records):
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    return responses_import(
        version=version, user=pi, data=data, filename="s.jsonl", format="jsonl", mapping=MAPPING
    )


def _stored(attempt) -> dict:
    row = SessionColumns.objects.filter(attempt=attempt).values(*SESSION_FIELDS).get()
    return row


def test_the_import_stores_each_sessions_typed_columns_beside_its_attempt(frozen):
    version, pi = frozen
    records = _block(version, fail_first="transport")
    _import(version, pi, records)
    attempts = list(Attempt.objects.filter(version=version).order_by("administration__position"))
    assert len(attempts) == 8
    assert SessionColumns.objects.filter(attempt__version=version).count() == 8
    for attempt, record in zip(attempts, records, strict=True):
        stored = _stored(attempt)
        # the one extractor's reading of the verbatim record, stored as it read it
        assert stored == session_record(attempt.raw, attempt.terminal_outcome).stored()
        usage = next(iter(record["model_usage"].values()))
        assert stored["tokens"] == usage["input_tokens"] + usage["output_tokens"]
        assert stored["cost"] == pytest.approx(record["metadata"]["cost_usd"])
        assert stored["interruptions"] == record["metadata"]["interruptions"]
        assert stored["self_report"] == "I picked the route that seemed quickest."
    failed = _stored(attempts[0])
    assert failed["infrastructure_failure"] == "transport"
    assert failed["aborted"] is True
    assert failed["tool_calls"] == []
    completed = _stored(attempts[1])
    assert completed["infrastructure_failure"] == ""
    assert completed["aborted"] is False
    assert completed["tool_calls"][0] == "read_input"
    assert completed["tool_calls"][1].endswith(("report", "report_batch"))
    assert completed["operations"] == 2


def test_a_refused_import_stores_no_columns(frozen):
    version, pi = frozen
    records = _block(version)
    records[3]["metadata"]["interruptions"] = -1
    with pytest.raises(Exception, match="interruptions"):
        _import(version, pi, records)
    assert not SessionColumns.objects.exists()
    assert not Attempt.objects.filter(version=version).exists()


def test_the_analysis_reads_the_stored_columns_not_the_archive(frozen):
    version, pi = frozen
    _import(version, pi, _block(version, fail_first="budget"))
    rows = [r for r in task_blocks(version)["administrations"] if r["terminal_outcome"]]
    assert len(rows) == 8
    assert all("record" not in r and not r["missing_columns"] for r in rows)
    strata = sorted(r["columns"]["infrastructure_failure"] for r in rows)
    assert strata == [""] * 7 + ["budget"]


def test_attempts_without_stored_columns_are_backfilled_once_and_refused_by_the_analysis_until(
    frozen, monkeypatch
):
    version, pi = frozen
    # Import as before the columns were stored.
    monkeypatch.setattr(paired_blocks._ImportCheck, "session_columns", False)
    _import(version, pi, _block(version))
    monkeypatch.undo()
    assert not SessionColumns.objects.exists()
    rows = [r for r in task_blocks(version)["administrations"] if r["terminal_outcome"]]
    assert all(r["missing_columns"] for r in rows)
    with pytest.raises(PlanInputError, match="backfill_session_columns"):
        paired_blocks.collect(version)
    call_command("backfill_session_columns", "--protocol", "ROUTE-S")
    assert SessionColumns.objects.count() == 8
    for attempt in Attempt.objects.filter(version=version):
        assert _stored(attempt) == session_record(attempt.raw, attempt.terminal_outcome).stored()
    assert session_columns_backfill(version=version) == (0, [])


def test_a_version_whose_plan_reads_no_sessions_gets_no_columns(protocol, pi):
    from tests.factories import answer_rows, build_draft, csv_bytes, freeze

    version = freeze(build_draft(protocol=protocol, user=pi), pi)
    responses_import(
        version=version, user=pi, data=csv_bytes(answer_rows(version)), filename="a.csv"
    )
    assert Attempt.objects.filter(version=version).exists()
    assert not SessionColumns.objects.exists()
    assert session_columns_backfill(version=version) == (0, [])


@pytest.mark.parametrize(("role", "status"), [("pi", 200), ("auditor", 200), ("reviewer", 404)])
def test_the_attempt_page_and_api_show_the_columns_to_pi_and_auditor_never_to_reviewers(
    client, frozen, role, status
):
    version, pi = frozen
    _import(version, pi, _block(version))
    person = pi if role == "pi" else MembershipFactory(protocol=version.protocol, role=role).user
    attempt = Attempt.objects.filter(version=version).order_by("administration__position")[1]
    stored = _stored(attempt)
    client.force_login(person)
    where = f"{version.protocol.code}/v/{version.label}/attempts/{attempt.administration.position}"
    page = client.get(f"/protocols/{where}/{attempt.number}/")
    assert page.status_code == status
    api = client.get(
        f"/api/v1/protocols/{version.protocol.code}/versions/{version.label}/attempts/"
        f"{attempt.administration.position}/{attempt.number}"
    )
    assert api.status_code == status
    if status != 200:
        assert "Session columns" not in page.content.decode()
        return
    html = page.content.decode()
    assert 'id="session-columns"' in html
    assert f"<dd>{stored['tokens']}</dd>" in html
    assert stored["tool_calls"][1] in html
    assert "never an endpoint" in html
    body = api.json()
    assert body["session_columns"]["tokens"] == stored["tokens"]
    assert body["session_columns"]["tool_calls"] == stored["tool_calls"]
    assert "self_report" not in body["session_columns"]
    assert body["self_report"] == stored["self_report"]


@pytest.mark.postgres
def test_postgresql_refuses_to_change_or_delete_stored_columns(frozen):
    version, pi = frozen
    _import(version, pi, _block(version))
    pk = SessionColumns.objects.values_list("pk", flat=True).first()

    def refused(sql: str) -> str:
        with pytest.raises(DatabaseError) as error, transaction.atomic(), connection.cursor() as c:
            c.execute(sql, [pk])
        return str(error.value)

    table = SessionColumns._meta.db_table
    assert refused_by_database(
        refused(f"UPDATE {table} SET tokens = 1 WHERE attempt_id = %s"), "UPDATE"
    )
    assert refused_by_database(refused(f"DELETE FROM {table} WHERE attempt_id = %s"), "DELETE")
    with pytest.raises(DatabaseError), transaction.atomic():
        SessionColumns.objects.filter(pk=pk).update(aborted=True)
    assert SessionColumns.objects.filter(pk=pk, tokens__gt=1).exists()


@pytest.mark.parametrize(
    ("where", "key", "value", "field"),
    [
        ("metadata", "cost_usd", 10**400, "cost_usd"),
        ("metadata", "operations", 2**40, "metadata.operations"),
        ("metadata", "interruptions", 10**30, "metadata.interruptions"),
        ("metadata", "unsupported_blockers", 2**33, "metadata.unsupported_blockers"),
        ("model_usage", "m", {"total_tokens": 10**25}, "model_usage[m].total_tokens"),
        ("model_usage", "m", {"input_tokens": 2**62, "output_tokens": 2**62}, "model_usage"),
    ],
)
def test_a_session_value_past_its_columns_range_is_refused_naming_row_and_field(
    frozen, where, key, value, field
):
    # Valid JSON numbers no column holds: they raised OverflowError (or, on PostgreSQL, an
    # out-of-range DataError) out of the import instead of a refusal naming the field.
    version, pi = frozen
    records = _block(version)
    records[0].setdefault(where, {})
    if where == "model_usage":
        records[0][where] = {key: value}
    else:
        records[0][where][key] = value
    with pytest.raises(ImportRejected) as rejected:
        _import(version, pi, records)
    assert [(p.row, p.field) for p in rejected.value.problems] == [(1, field)]
    assert not Attempt.objects.filter(version=version).exists()
