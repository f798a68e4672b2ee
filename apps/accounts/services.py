"""Writes about users and memberships."""

from django.db import transaction
from rest_framework.authtoken.models import Token

from apps.accounts.models import Membership, Role, User


@transaction.atomic
def membership_grant(*, user: User, protocol_id: int, role: str) -> Membership:
    """Give ``user`` the ``role`` on the protocol (idempotent: an existing grant is returned)."""
    if role not in Role.values:
        from django.core.exceptions import ValidationError

        raise ValidationError({"role": f"{role!r} is not a role; use one of {Role.values}"})
    membership, _ = Membership.objects.get_or_create(user=user, protocol_id=protocol_id, role=role)
    return membership


@transaction.atomic
def api_token_rotate(*, user: User) -> Token:
    """Replace the user's API token with a new one and return it."""
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user)
