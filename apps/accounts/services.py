"""Writes about users and memberships."""

from django.core.exceptions import ValidationError
from django.db import transaction
from rest_framework.authtoken.models import Token

from apps.accounts.models import Membership, Role, User
from apps.core.rows import full_clean_save


@transaction.atomic
def membership_grant(*, user: User, protocol_id: int, role: str) -> Membership:
    """Give ``user`` the ``role`` on the protocol (idempotent: an existing grant is returned).

    Raises ValidationError naming ``role`` when it is not a role, or when it would give one
    person both the reviewer role and a sighted role on one protocol (the message says why).
    Writes no log entry: ``protocol_member_add`` does, for grants made by a person.
    """
    if role not in Role.values:
        raise ValidationError({"role": f"{role!r} is not a role; use one of {Role.values}"})
    # Two grants to one person at once (reviewer and PI, say) must not both pass the check.
    list(User.objects.select_for_update().filter(pk=user.pk).values_list("pk", flat=True))
    existing = Membership.objects.filter(user=user, protocol_id=protocol_id, role=role).first()
    if existing is not None:
        return existing
    membership = Membership(user=user, protocol_id=protocol_id, role=role)
    return full_clean_save(membership)


@transaction.atomic
def api_token_rotate(*, user: User) -> Token:
    """Replace the user's API token with a new one and return it."""
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user)
