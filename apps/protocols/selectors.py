"""Reads of protocols and versions."""

from django.db.models import QuerySet

from apps.accounts.models import User
from apps.accounts.selectors import SIGHTED_ROLES
from apps.protocols.models import Protocol


def protocols_for(*, user: User) -> QuerySet[Protocol]:
    """The protocols on which ``user`` holds a sighted role (PI, editor or auditor)."""
    return (
        Protocol.objects.filter(memberships__user=user, memberships__role__in=SIGHTED_ROLES)
        .distinct()
        .order_by("code")
    )
