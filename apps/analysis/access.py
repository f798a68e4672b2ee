"""Access helpers for analysis runs: PI and auditor read them, the PI starts them.

Through the protocols app's version helper, so through ``apps.accounts.access.require_roles``:
a blind reviewer or a stranger gets 404 (the protocol does not exist for them), an editor 403.
The role is checked before the version label or run number is looked up, so someone who may not
know the protocol learns nothing about them.
"""

from collections.abc import Iterable

from apps.accounts.models import Role, User
from apps.analysis.models import AnalysisRun
from apps.core.access import first_or_404
from apps.protocols.access import get_version_by_label_for
from apps.protocols.models import ProtocolVersion

READ_ROLES = frozenset({Role.PI, Role.AUDITOR})
START_ROLES = frozenset({Role.PI})


def get_analysis_version_for(
    *, user: User, code: str, label: str, roles: Iterable[str]
) -> ProtocolVersion:
    """Version ``label`` of protocol ``code`` if ``user`` holds one of ``roles`` on it.

    Raises Http404 or PermissionDenied (``apps.protocols.access.get_version_by_label_for``).
    """
    return get_version_by_label_for(user=user, code=code, label=label, roles=roles)


def get_run_for(
    *, user: User, code: str, label: str, number: int, roles: Iterable[str] = READ_ROLES
) -> AnalysisRun:
    """Analysis run ``number`` of version ``label`` of protocol ``code``, for ``user``.

    Raises Http404 or PermissionDenied as ``get_analysis_version_for`` does.
    """
    version = get_analysis_version_for(user=user, code=code, label=label, roles=roles)
    runs = AnalysisRun.objects.select_related("version__protocol", "requested_by", "rerun_of")
    run = first_or_404(runs.filter(version=version, number=number), "No such analysis run.")
    return run
