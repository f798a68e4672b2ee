"""Fixtures shared by the blind-rating tests."""

import pytest

from apps.accounts.models import Role
from apps.raters.services import scoring_open, study_queue_rename
from tests.factories import MembershipFactory, frozen_study


@pytest.fixture
def two_studies():
    """Two frozen studies with scoring open (k = 1; 3 and 2 responses), named "Blue queue" and
    "Green queue", and the one reviewer of both: ``(first, second, reviewer)``."""
    first = frozen_study(responses=3, reviewers=1, parameters={"scores_per_response": 1})
    second = frozen_study(responses=2, reviewers=0, parameters={"scores_per_response": 1})
    reviewer = first.reviewers[0]
    MembershipFactory(user=reviewer, protocol=second.version.protocol, role=Role.REVIEWER)
    for study, name in ((first, "Blue queue"), (second, "Green queue")):
        scoring_open(version=study.version, user=study.pi)
        study_queue_rename(protocol=study.version.protocol, name=name, user=study.pi)
    return first, second, reviewer


@pytest.fixture(scope="session")
def inspect_logs(tmp_path_factory):
    """Inspect AI logs written by inspect_ai itself, once per session (``tests/inspect_logs``):
    ``{"two_scorers", "appended", "other_grader": path}``."""
    from apps.responses.formats import inspect_available
    from tests.inspect_logs import written_logs

    if not inspect_available():
        pytest.skip("inspect_ai (extra 'inspect') not installed")
    return written_logs(tmp_path_factory.mktemp("inspect_logs"))
