"""Access helpers for evaluands, rosters, attempts and imports: every view, API and command
uses these, and the services check no role. The roster and imports are the PI's and editors'
(``WRITE_ROLES``); exclusions and control validations the PI's (``PI_ROLES``).

Nothing here is ever shown to a blind reviewer: a reviewer asking for any of it gets 404, as for
any protocol page (``apps.accounts.access.require_roles``).
"""

from collections.abc import Iterable

from django.core.exceptions import PermissionDenied
from django.http import Http404

from apps.accounts.access import require_held_roles
from apps.accounts.models import Role, User
from apps.accounts.selectors import SIGHTED_ROLES, user_roles
from apps.core.access import first_or_404
from apps.protocols.access import get_version_by_label_for
from apps.protocols.models import ProtocolVersion
from apps.responses.models import Attempt, Evaluand
from apps.responses.selectors import attempt_detail, evaluands_visible_to

READ_ROLES = (Role.PI, Role.EDITOR, Role.AUDITOR)
WRITE_ROLES = (Role.PI, Role.EDITOR)
PI_ROLES = (Role.PI,)


def _evaluand_roles(*, user: User) -> frozenset[str]:
    """``user``'s roles anywhere; Http404 when they are all blind (evaluand pages do not exist
    for a blind reviewer)."""
    roles = user_roles(user=user)
    if roles and not roles & SIGHTED_ROLES:
        raise Http404("No such page.")
    return roles


def require_evaluand_author(*, user: User) -> None:
    """Evaluand pages are for people who set up studies, never for blind reviewers.

    Someone with no role yet may register evaluands (they are about to start a protocol);
    someone whose only roles are blind gets 404.
    """
    _evaluand_roles(user=user)


def require_evaluand_writer(*, user: User) -> None:
    """Registering or revising an evaluand is setting up a study: for someone with no role yet
    (about to start a protocol) or a PI or editor somewhere. Blind reviewers get 404, as for every
    evaluand page; someone who only audits reads, and gets PermissionDenied here."""
    roles = _evaluand_roles(user=user)
    if roles and not roles & set(WRITE_ROLES):
        raise PermissionDenied("Auditors read evaluands; a PI or an editor registers them.")


def get_evaluand_for(*, user: User, pk: int) -> Evaluand:
    """The evaluand ``pk`` if ``user`` may see it (registered it, or holds a sighted role on a
    protocol that enrols it); Http404 otherwise."""
    require_evaluand_author(user=user)
    evaluand = first_or_404(evaluands_visible_to(user=user).filter(pk=pk), "No such evaluand.")
    return evaluand


def get_responses_version_for(
    *, user: User, code: str, label: str, roles=READ_ROLES
) -> ProtocolVersion:
    """Version ``label`` of protocol ``code`` for its responses pages: 404 or PermissionDenied as
    for any version (a draft is read by its PI and editors only)."""
    return get_version_by_label_for(user=user, code=code, label=label, roles=roles)


def get_attempt_for(
    *, user: User, code: str, label: str, position: int, number: int, roles=READ_ROLES
) -> Attempt:
    """Attempt ``number`` of the administration at schedule ``position`` of the version, with
    what its page shows, if ``user`` holds ``roles``; the role is checked first."""
    version = get_responses_version_for(user=user, code=code, label=label, roles=roles)
    attempt = attempt_detail(version=version, position=position, number=number)
    if attempt is None:
        raise Http404("No such attempt.")
    return attempt


def require_version_role(
    *, user: User, version: ProtocolVersion, roles: Iterable[str], doing: str
) -> None:
    """For callers handed ``version`` rather than asked for it by a request (``manage.py
    import_responses --user``): PermissionDenied ("Your role on … does not allow you to
    ``doing``") unless ``user`` holds one of ``roles`` on its protocol; never 404."""
    require_held_roles(
        user=user,
        protocol_id=version.protocol_id,
        roles=roles,
        refusal=f"Your role on {version} does not allow you to {doing}.",
    )
