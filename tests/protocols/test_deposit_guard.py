"""Issue #17 §5: PostgreSQL refuses to change or delete a deposited version's record."""

import pytest

from apps.demo.opb01 import opb01_history_build
from tests.dbroles import assert_sql_refused
from tests.factories import UserFactory

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def test_a_deposit_cannot_be_changed_or_deleted():
    deposit = opb01_history_build(pi=UserFactory()).v1_0.deposit
    assert_sql_refused(
        "UPDATE protocols_deposit SET frozen_where = 'elsewhere' WHERE id = %s", [deposit.pk]
    )
    assert_sql_refused("DELETE FROM protocols_deposit WHERE id = %s", [deposit.pk])
