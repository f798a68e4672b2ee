"""The one rule every access helper applies: 404 for those who must not know, 403 for the rest.

Each app has its own helper per object kind (``get_protocol_for``, ``get_version_for``,
``get_task_for``, …); they all decide through ``require_roles`` so the rule lives in one place.

Roles are checked here and in the per-app ``access.py`` helpers that views, APIs and management
commands call before a service; services check the state of what they change, never who asks.
"""

from collections.abc import Iterable
from typing import cast

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest

from apps.accounts.models import User
from apps.accounts.selectors import SIGHTED_ROLES, roles_for


def signed_in_user(request: HttpRequest) -> User:
    """The user of a ``login_required`` view's request (never anonymous there), typed as ours."""
    return cast(User, request.user)


def require_roles(*, user: User, protocol_id: int, roles: Iterable[str]) -> frozenset[str]:
    """Return the user's roles on the protocol if one of them is in ``roles``.

    Raises Http404 when the user holds no role on the protocol, or holds only roles that must not
    learn it exists (a blind reviewer asking for a sighted page); PermissionDenied when the user
    can see the protocol but lacks every role in ``roles``.
    """
    return roles_allow(held=roles_for(user=user, protocol_id=protocol_id), roles=roles)


def roles_allow(*, held: frozenset[str], roles: Iterable[str]) -> frozenset[str]:
    """``require_roles``'s rule for roles already read (a helper that reads them with its object
    in one query): return ``held`` if one of them is in ``roles``, else raise as it does."""
    if held & frozenset(roles):
        return held
    if not held or not (held & SIGHTED_ROLES):
        raise Http404("No such protocol.")
    raise PermissionDenied("Your role on this protocol does not allow this.")


class AuthenticatedHttpRequest(HttpRequest):
    """The request a ``login_required`` view receives: its user is signed in.

    For the type checker only (django-stubs' documented pattern): annotate such a view's
    ``request`` with it, never a view that anonymous users reach.
    """

    user: User


def require_held_roles(
    *, user: User, protocol_id: int, roles: Iterable[str], refusal: str
) -> frozenset[str]:
    """Return the user's roles on the protocol if one of them is in ``roles``.

    For callers that name the protocol themselves rather than take it from a request (a
    management command's ``--user``): there is nothing to hide, so anyone lacking every role in
    ``roles`` gets PermissionDenied with ``refusal``, never Http404.
    """
    held = roles_for(user=user, protocol_id=protocol_id)
    if held & frozenset(roles):
        return held
    raise PermissionDenied(refusal)
