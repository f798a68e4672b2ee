"""Access helpers for protocols and their versions: every view and API goes through these.

Who may do what (README "Roles"): PI, editor and auditor read a protocol and its frozen versions;
PI and editor read and edit drafts; only a PI freezes, amends, withdraws and manages members.
A reviewer (blind) or a stranger gets 404 for every protocol page and endpoint.
"""

from collections.abc import Iterable
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed

from apps.accounts.access import require_roles, roles_allow
from apps.accounts.models import Membership, Role, User
from apps.accounts.selectors import SIGHTED_ROLES
from apps.core.access import first_or_404
from apps.core.inputs import whole_number
from apps.protocols.models import Protocol, ProtocolVersion

READ_ROLES = SIGHTED_ROLES
MAX_ID = 2**63 - 1  # a bigint's largest value: a larger number is no protocol's id
_PROTOCOLS = Protocol._meta.db_table
_MEMBERSHIPS = Membership._meta.db_table
_TOKENS = Token._meta.db_table
_USERS = User._meta.db_table
EDIT_ROLES = frozenset({Role.PI, Role.EDITOR})
PI_ROLES = frozenset({Role.PI})


def get_protocol_for(
    *, user: User, pk: int | str, roles: Iterable[str], token_key: str | None = None
) -> Protocol:
    """The protocol ``pk`` (id or code) if ``user`` holds one of ``roles`` on it.

    ``token_key``: the API token the request came with when its user was read from a
    per-process cache (``apps.accounts.authentication.CachedTokenAuthentication``); the same
    statement then checks that the token still exists and its user is active, so that a token
    revoked in any process stops working at once. Raises Http404 (unknown, or the user must not
    know it exists), PermissionDenied, or AuthenticationFailed (a dead token, before anything
    about the protocol is said).
    """
    text = str(pk)
    number = whole_number(text) if text == text.strip() else None
    by = "code" if number is None else "id"
    if number is not None and number > MAX_ID:
        raise Http404("No such protocol.")
    # The protocol with the user's roles on it in one query (every API call on a protocol pays
    # for it): one row per role held, or one with none (an anonymous user's pk is None: none);
    # one row with no protocol when there is none, so that the token's check still answers.
    # Raw SQL: the ORM took longer to compile this join than PostgreSQL takes to answer it.
    live = "TRUE"
    params: list[Any] = []
    if token_key is not None:
        live = (
            f"EXISTS (SELECT 1 FROM {_TOKENS} k JOIN {_USERS} u ON u.id = k.user_id "
            "WHERE k.key = %s AND k.user_id = %s AND u.is_active)"
        )
        params = [token_key, user.pk]
    rows: list[Any] = list(  # Protocol rows, each with its held_role and token_live
        Protocol.objects.raw(
            f"SELECT p.*, m.role AS held_role, t.token_live FROM (SELECT {live} AS token_live) t "
            f"LEFT JOIN {_PROTOCOLS} p ON p.{by} = %s "
            f"LEFT JOIN {_MEMBERSHIPS} m ON m.protocol_id = p.id AND m.user_id = %s",
            [*params, text if number is None else number, user.pk],
        )
    )
    if not rows[0].token_live:
        raise AuthenticationFailed("Invalid token.")
    if rows[0].pk is None:
        raise Http404("No such protocol.")
    roles_allow(held=frozenset(r.held_role for r in rows if r.held_role), roles=roles)
    return rows[0]


def _check_draft(*, user: User, version: ProtocolVersion, held: frozenset[str]) -> None:
    if version.is_editable and not held & EDIT_ROLES:
        # An auditor knows the protocol exists but reads only what is closed: frozen versions,
        # and drafts set aside for a later version (kept unaltered, and what an amendment in
        # the log is about), never a draft still being written.
        raise PermissionDenied("Drafts are read by the protocol's PI and editors only.")


def _versions() -> QuerySet[ProtocolVersion]:
    return ProtocolVersion.objects.select_related("protocol", "supersedes", "frozen_by")


def get_version_for(*, user: User, pk: int, roles: Iterable[str]) -> ProtocolVersion:
    """The protocol version ``pk`` if ``user`` holds one of ``roles`` on its protocol.

    Raises Http404 or PermissionDenied as ``get_protocol_for`` does; a draft is refused
    (PermissionDenied) to anyone who is neither PI nor editor.
    """
    version = first_or_404(_versions().filter(pk=pk), "No such protocol version.")
    held = require_roles(user=user, protocol_id=version.protocol_id, roles=roles)
    _check_draft(user=user, version=version, held=held)
    return version


def get_version_by_label_for(
    *, user: User, code: str, label: str, roles: Iterable[str]
) -> ProtocolVersion:
    """Version ``label`` of protocol ``code`` if ``user`` holds one of ``roles`` on it.

    The role is checked before the label is looked up, so that someone who may not know the
    protocol learns nothing about its versions either. Drafts as in ``get_version_for``.
    """
    protocol = first_or_404(Protocol.objects.filter(code=code), "No such protocol.")
    held = require_roles(user=user, protocol_id=protocol.pk, roles=roles)
    version = first_or_404(
        _versions().filter(protocol=protocol, label=label), "No such protocol version."
    )
    _check_draft(user=user, version=version, held=held)
    return version
