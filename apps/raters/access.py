"""Access helpers of blind rating: every view, API and command goes through these.

The services of rating check state only. The rubric, the scorer roster, machine-score imports
and oracle runs are the PI's and editors' (``RUBRIC_EDITORS``); publishing the rubric text and
managing scoring the PI's.
"""

from collections.abc import Iterable

from django.core.exceptions import PermissionDenied

from apps.accounts.models import Role, User
from apps.protocols.access import get_version_for
from apps.protocols.models import ProtocolVersion
from apps.raters.models import Assignment, ScoringTask
from apps.raters.selectors import scoring_refusal, task_for_reviewer

RUBRIC_EDITORS = (Role.PI, Role.EDITOR)
SCORING_MANAGERS = (Role.PI,)


def get_rubric_version_for(
    *, user: User, pk: int, roles: Iterable[str] = RUBRIC_EDITORS
) -> ProtocolVersion:
    """The version whose rubric ``user`` may read or edit (PI or editor); 404 for a blind
    reviewer or a stranger, 403 for other sighted roles."""
    return get_version_for(user=user, pk=pk, roles=roles)


def get_scoring_version_for(*, user: User, pk: int) -> ProtocolVersion:
    """The version whose scoring ``user`` manages (PI only)."""
    return get_version_for(user=user, pk=pk, roles=SCORING_MANAGERS)


def get_task_for(*, user: User, token: str) -> tuple[ScoringTask, Assignment]:
    """The task behind ``token`` if ``user`` reserved it; Http404 ("No such task.") otherwise.

    PermissionDenied, with the reason, when the user has since lost the reviewer role on the
    protocol or the version was withdrawn: a revoked reviewer reads the task no more.
    """
    task, assignment = task_for_reviewer(token=token, reviewer=user)
    reason = scoring_refusal(reviewer=user, version_id=task.version_id)
    if reason is not None:
        raise PermissionDenied(reason)
    return task, assignment
