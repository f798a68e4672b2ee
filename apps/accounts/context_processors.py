from apps.accounts.models import Role
from apps.accounts.selectors import SIGHTED_ROLES, user_roles


def places(request) -> dict:
    """The navigation a user sees: each role its own places.

    A reviewer who holds no other role sees only their queue: protocol titles can give a study's
    design away. Someone with no role yet sees "Protocols", where they can start one.
    """
    if not request.user.is_authenticated:
        return {"nav_roles": frozenset()}
    roles = user_roles(user=request.user)
    return {
        "nav_roles": roles,
        "nav_protocols": bool(roles & SIGHTED_ROLES) or not roles,
        "nav_queue": Role.REVIEWER in roles,
        "nav_logs": bool(roles & {Role.AUDITOR, Role.PI, Role.EDITOR}),
    }
