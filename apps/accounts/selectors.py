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


def blinding_conflict(*, user_id: int, protocol_id: int, role: str) -> str | None:
    """Why ``role`` may not be given to the user on the protocol, or None.

    Blinding by construction: a reviewer must not be able to read the protocol, so nobody holds
    the reviewer role together with a sighted role (PI, editor, auditor) on one protocol.
    """
    held = set(
        Membership.objects.filter(user_id=user_id, protocol_id=protocol_id).values_list(
            "role", flat=True
        )
    )
    if role == Role.REVIEWER and held & SIGHTED_ROLES:
        sighted = ", ".join(sorted(Role(r).label for r in held & SIGHTED_ROLES))
        return (
            f"a reviewer scores blind, and this person is {sighted} on this protocol and can "
            "read it; remove that role first or choose another reviewer"
        )
    if role in SIGHTED_ROLES and Role.REVIEWER in held:
        return (
            f"this person is a blind reviewer on this protocol; a {Role(role).label} can read "
            "the protocol, which would unblind their scoring. Remove the reviewer role first"
        )
    return None
