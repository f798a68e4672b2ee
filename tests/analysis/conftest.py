"""Fixtures for the analysis tests: small frozen studies and a way to run a run now."""

import pytest

from apps.analysis.models import AnalysisRun
from apps.analysis.services import analysis_run_request
from tests.factories import opb_study


@pytest.fixture
def study(db):
    """One evaluand, six items per family, two repetitions: small enough to run in seconds."""
    return opb_study(evaluands=1)


@pytest.fixture
def run_now(django_capture_on_commit_callbacks):
    """Request a run and execute it (tasks are eager in tests) once the request commits."""

    def run(version, user, **kwargs) -> AnalysisRun:
        with django_capture_on_commit_callbacks(execute=True):
            run = analysis_run_request(version=version, user=user, **kwargs)
        run.refresh_from_db()
        return run

    return run


@pytest.fixture
def unseal():
    """Break the version's outcome seal through the deviations app's service (logged)."""
    from apps.deviations.services import outcome_unseal

    def unseal(version, user):
        return outcome_unseal(version=version, user=user, confirmation=version.protocol.code)

    return unseal
