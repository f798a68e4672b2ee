"""PostgreSQL refuses to change what an analysis run was asked, its hashes, or a finished run."""

import pytest
from django.db import DatabaseError, connection, transaction

from apps.analysis.models import AnalysisRun, RunState
from apps.analysis.services import analysis_run_request
from tests.dbroles import assert_sql_refused

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def test_a_succeeded_runs_hashes_and_state_cannot_be_changed(study, run_now):
    run = run_now(study.version, study.pi)
    assert run.state == RunState.SUCCEEDED
    other = run.inputs_id
    assert_sql_refused(
        "UPDATE analysis_analysisrun SET result_sha256 = %s WHERE id = %s", [other, run.pk]
    )
    assert_sql_refused(
        "UPDATE analysis_analysisrun SET input_sha256 = NULL WHERE id = %s", [run.pk]
    )
    assert_sql_refused("UPDATE analysis_analysisrun SET state = 'queued' WHERE id = %s", [run.pk])
    with pytest.raises(DatabaseError, match="preregistry:"), transaction.atomic():
        AnalysisRun.objects.filter(pk=run.pk).update(progress_message="edited")


def test_what_a_queued_run_was_asked_cannot_be_changed(study):
    run = analysis_run_request(version=study.version, user=study.pi)
    assert_sql_refused("UPDATE analysis_analysisrun SET seed = seed + 1 WHERE id = %s", [run.pk])
    assert_sql_refused(
        "UPDATE analysis_analysisrun SET parameters = '{}'::jsonb WHERE id = %s", [run.pk]
    )
    # progress on an unfinished run stays possible
    assert AnalysisRun.objects.filter(pk=run.pk).update(progress=5) == 1


def test_runs_are_never_deleted_or_truncated(study):
    run = analysis_run_request(version=study.version, user=study.pi)
    assert_sql_refused("DELETE FROM analysis_analysisrun WHERE id = %s", [run.pk])
    with connection.cursor() as cursor:
        # Settle the deferred foreign-key checks first, or PostgreSQL refuses the TRUNCATE for
        # that reason before the guard can speak.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    assert_sql_refused("TRUNCATE analysis_analysisrun CASCADE", [])


def test_a_succeeded_run_without_a_result_is_refused_by_a_constraint(study):
    from django.db import IntegrityError

    run = analysis_run_request(version=study.version, user=study.pi)
    with pytest.raises(IntegrityError), transaction.atomic():
        AnalysisRun.objects.filter(pk=run.pk).update(state=RunState.SUCCEEDED)
