"""Issue #17 §5: PostgreSQL refuses to change or delete a deposited version's record."""

import pytest
from django.db import DatabaseError, connection, transaction

from apps.demo.opb01 import opb01_history_build
from tests.dbroles import refused_by_database
from tests.factories import UserFactory

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def _refused(sql, params):
    with (
        pytest.raises(DatabaseError) as error,
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(sql, params)
    assert refused_by_database(str(error.value)), error.value


def test_a_deposit_cannot_be_changed_or_deleted():
    deposit = opb01_history_build(pi=UserFactory()).v1_0.deposit
    _refused("UPDATE protocols_deposit SET frozen_where = 'elsewhere' WHERE id = %s", [deposit.pk])
    _refused("DELETE FROM protocols_deposit WHERE id = %s", [deposit.pk])
