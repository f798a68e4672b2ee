"""OPB-01 §6.1 and §6.3 records are analysis inputs kept as recorded: on PostgreSQL the database
itself refuses to change or delete a panel member, a panel flag or a surface's fresh-session
record, whatever the code asks (as it does for responses and deposits)."""

import pytest

from apps.responses.models import Evaluand
from apps.responses.surfaces import session_guarantee_record
from apps.studies.opb.panel import panel_flag_record, panel_member_add
from tests.dbroles import assert_sql_refused
from tests.factories import opb_study

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def test_panel_and_fresh_session_records_cannot_be_changed_or_deleted():
    study = opb_study(code="GUARD", evaluands=1, parameters={"interval_method": "analytic"})
    member = panel_member_add(actor=study.pi, version=study.version, code="p-01")
    flag = panel_flag_record(
        actor=study.pi, version=study.version, member=member, item_code="A01", flagged=True
    )
    evaluand = Evaluand.objects.filter(rosters__version=study.version).first()
    guarantee = session_guarantee_record(evaluand=evaluand, user=study.pi, fresh_session="yes")
    for table, column, value, pk in (
        ("items_panelflag", "flagged", "false", flag.pk),
        ("items_panelmember", "code", "'p-99'", member.pk),
        ("responses_sessionguarantee", "fresh_session", "'no'", guarantee.pk),
    ):
        assert_sql_refused(f"UPDATE {table} SET {column} = {value} WHERE id = %s", [pk])
        assert_sql_refused(f"DELETE FROM {table} WHERE id = %s", [pk])
