"""PostgreSQL refuses every UPDATE and DELETE of evaluands, imports, attempts, responses and
exclusions — by raw SQL and by QuerySet.update()/delete() alike — and every write to a frozen
version's roster and schedule."""

import pytest
from django.db import DatabaseError, connection, transaction

from apps.responses.models import (
    Administration,
    Attempt,
    Evaluand,
    Exclusion,
    Response,
    ResponseImport,
    RosterEntry,
)
from apps.responses.services import exclusion_record, responses_import
from tests.dbroles import refused_by_database
from tests.factories import answer_rows, csv_bytes

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

APPEND_ONLY = [
    (Evaluand, "label", "'renamed'"),
    (ResponseImport, "note", "'edited'"),
    (Attempt, "terminal_outcome", "'refused'"),
    (Response, "text", "'rewritten'"),
    (Exclusion, "rationale", "'softened'"),
]


@pytest.fixture
def rows(frozen, pi):
    responses_import(version=frozen, user=pi, data=csv_bytes(answer_rows(frozen)), filename="a.csv")
    attempt = Attempt.objects.filter(version=frozen).first()
    exclusion_record(attempt=attempt, reason_code="record_corrupt", rationale="x", user=pi)
    return frozen


def _refused(run) -> str:
    with pytest.raises(DatabaseError) as error, transaction.atomic():
        run()
    assert refused_by_database(str(error.value))
    return str(error.value)


@pytest.mark.parametrize(("model", "column", "value"), APPEND_ONLY)
def test_raw_sql_update_and_delete_are_refused(rows, model, column, value):
    table = model._meta.db_table
    pk = model.objects.values_list("pk", flat=True).first()

    def update():
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE {table} SET {column} = {value} WHERE id = %s", [pk])

    def delete():
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {table} WHERE id = %s", [pk])

    assert refused_by_database(_refused(update), "UPDATE")
    assert refused_by_database(_refused(delete), "DELETE")
    assert model.objects.filter(pk=pk).exists()


@pytest.mark.parametrize(("model", "column", "value"), APPEND_ONLY)
def test_queryset_update_is_refused(rows, model, column, value):
    _refused(lambda: model.objects.update(**{column: value.strip("'")}))


def test_a_frozen_versions_schedule_and_roster_refuse_every_write(rows):
    administration = Administration.objects.filter(version=rows).first()
    assert "frozen" in _refused(
        lambda: Administration.objects.filter(pk=administration.pk).update(repetition=9)
    )
    assert "frozen" in _refused(lambda: RosterEntry.objects.filter(version=rows).update(code="x"))

    def insert():
        Administration.objects.create(
            version=rows,
            position=999,
            cell=administration.cell,
            evaluand=administration.evaluand,
            repetition=2,
        )

    assert "frozen" in _refused(insert)
