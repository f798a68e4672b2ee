"""The database itself refuses to change or remove log entries, unsealings and history rows.

Every django-simple-history table is found from the model registry, so a history table that a
later app adds is covered here without anyone remembering to list it.
"""

import pytest
from django.apps import apps
from django.db import DatabaseError, connection, transaction
from simple_history.models import HistoricalChanges

from apps.deviations.models import LogEntry, OutcomeUnsealing
from apps.deviations.services import outcome_unseal
from tests.dbroles import refused_by_database
from tests.factories import ProtocolVersionFactory

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

# pg_trigger.tgtype bits (PostgreSQL's trigger.h)
ROW, BEFORE, DELETE, UPDATE, TRUNCATE = 1, 2, 8, 16, 32


def history_tables() -> list[str]:
    return sorted(
        model._meta.db_table for model in apps.get_models() if issubclass(model, HistoricalChanges)
    )


def append_only_tables() -> list[str]:
    return [LogEntry._meta.db_table, OutcomeUnsealing._meta.db_table, *history_tables()]


def refused(sql: str, params=()) -> str:
    """Run ``sql`` in a savepoint and return the database's refusal message (fails if none)."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)
    except DatabaseError as error:
        return str(error)
    pytest.fail(f"the database accepted: {sql}")


def row_count(table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {table}")
        return cursor.fetchone()[0]


def test_the_project_has_history_tables_to_guard():
    # If this fails, the registry lookup below silently checks nothing.
    assert "protocols_historicalprotocolversion" in history_tables()


@pytest.mark.parametrize("table", append_only_tables())
def test_every_append_only_table_has_its_guards_installed_and_enabled(table):
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT t.tgtype, t.tgenabled, p.proname FROM pg_trigger t
            JOIN pg_proc p ON p.oid = t.tgfoid
            WHERE t.tgrelid = %s::regclass AND NOT t.tgisinternal
            """,
            [table],
        )
        triggers = cursor.fetchall()
    refusing = [
        (tgtype, enabled)
        for tgtype, enabled, name in triggers
        if name == "preregistry_refuse_change"
    ]
    assert any(
        t & ROW and t & BEFORE and t & UPDATE and t & DELETE and e == "O" for t, e in refusing
    ), f"{table} lacks an enabled append_only trigger: add append_only({table!r}) in a migration"
    assert any(t & TRUNCATE and e == "O" for t, e in refusing), f"{table} can be truncated"


@pytest.fixture
def guarded_rows(protocol, pi, append):
    """At least one row in the log, the unsealings and each history table this suite can fill."""
    append(protocol, 3)
    version = ProtocolVersionFactory(protocol=protocol, label="1.0")
    version.parameters.create(name="epsilon", label="ε", kind="number", value="0.05")
    with connection.cursor() as cursor:  # freeze it the way only a service may: state changes
        cursor.execute(
            "UPDATE protocols_protocolversion SET state = 'frozen' WHERE id = %s", [version.pk]
        )
    version.refresh_from_db()
    outcome_unseal(version=version, user=pi, confirmation=protocol.code)


@pytest.mark.parametrize("table", append_only_tables())
def test_update_delete_and_truncate_are_refused(guarded_rows, table):
    rows = row_count(table)
    assert rows > 0, f"no row in {table} to try the guard on"
    assert refused_by_database(refused(f"UPDATE {table} SET id = id"), "UPDATE")
    assert refused_by_database(refused(f"DELETE FROM {table}"), "DELETE")
    # The rows were inserted in this test's transaction; their deferred foreign-key checks must
    # run first, or PostgreSQL refuses the TRUNCATE for that reason before our trigger speaks.
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    assert refused_by_database(refused(f"TRUNCATE {table} CASCADE"), "TRUNCATE")
    assert row_count(table) == rows


@pytest.mark.parametrize("table", history_tables())
def test_truncating_an_empty_history_table_is_refused_too(table):
    assert refused_by_database(refused(f"TRUNCATE {table}"), "TRUNCATE")


def test_a_rewrite_of_an_entrys_rationale_by_raw_sql_is_refused(protocol, append):
    (entry,) = append(protocol, 1)
    message = refused(
        "UPDATE deviations_logentry SET rationale = %s WHERE id = %s", ["rewritten", entry.pk]
    )
    assert refused_by_database(message, "UPDATE")
    entry.refresh_from_db()
    assert entry.rationale.startswith("Entry 1")
