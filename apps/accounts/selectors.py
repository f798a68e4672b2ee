"""Reads about users and their roles."""

from django.db.models import QuerySet

from apps.accounts.models import Membership, Role, User

# Roles that may read protocol text. A reviewer who holds no other role is blind: to them a
# protocol's pages do not exist (404), not merely "forbidden" (403).
SIGHTED_ROLES = frozenset({Role.PI, Role.EDITOR, Role.AUDITOR})


def roles_for(*, user: User, protocol_id: int) -> frozenset[str]:
    """The set of role codes (``"pi"``, ``"editor"``, …) ``user`` holds on the protocol."""
    if not user.is_authenticated:
        return frozenset()
    return frozenset(
        Membership.objects.filter(user=user, protocol_id=protocol_id).values_list("role", flat=True)
    )


def user_roles(*, user: User) -> frozenset[str]:
    """Every role code ``user`` holds on any protocol."""
    if not user.is_authenticated:
        return frozenset()
    return frozenset(Membership.objects.filter(user=user).values_list("role", flat=True).distinct())


def memberships_of(*, protocol_id: int) -> QuerySet[Membership]:
    """The memberships of a protocol, with their users, ordered by role then username."""
    return (
        Membership.objects.filter(protocol_id=protocol_id)
        .select_related("user")
        .order_by("role", "user__username")
    )
