"""Access helpers for protocols and their versions: every view and API goes through these."""

from collections.abc import Iterable

from django.http import Http404

from apps.accounts.access import require_roles
from apps.accounts.models import User
from apps.protocols.models import Protocol, ProtocolVersion


def get_protocol_for(*, user: User, pk: int | str, roles: Iterable[str]) -> Protocol:
    """The protocol ``pk`` (id or code) if ``user`` holds one of ``roles`` on it.

    Raises Http404 (unknown, or the user must not know it exists) or PermissionDenied.
    """
    lookup = {"pk": pk} if str(pk).isdigit() else {"code": pk}
    protocol = Protocol.objects.filter(**lookup).first()
    if protocol is None:
        raise Http404("No such protocol.")
    require_roles(user=user, protocol_id=protocol.pk, roles=roles)
    return protocol


def get_version_for(*, user: User, pk: int, roles: Iterable[str]) -> ProtocolVersion:
    """The protocol version ``pk`` if ``user`` holds one of ``roles`` on its protocol.

    Raises Http404 or PermissionDenied as ``get_protocol_for`` does.
    """
    version = (
        ProtocolVersion.objects.select_related("protocol", "supersedes", "frozen_by")
        .filter(pk=pk)
        .first()
    )
    if version is None:
        raise Http404("No such protocol version.")
    require_roles(user=user, protocol_id=version.protocol_id, roles=roles)
    return version
