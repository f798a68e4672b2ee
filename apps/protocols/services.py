"""Writes of protocols and versions."""

from django.db import transaction

from apps.accounts.models import Role, User
from apps.accounts.services import membership_grant
from apps.protocols.models import Protocol


@transaction.atomic
def protocol_create(*, user: User, code: str, title: str, template: str = "opb") -> Protocol:
    """Create a protocol whose PI is ``user``.

    Raises ValidationError naming the field when the code is malformed or already taken.
    """
    protocol = Protocol(code=code.strip(), title=title.strip(), template=template, created_by=user)
    protocol.full_clean()
    protocol.save()
    membership_grant(user=user, protocol_id=protocol.pk, role=Role.PI)
    return protocol
