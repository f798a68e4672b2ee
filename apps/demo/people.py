"""The demo's people. Their passwords are printed by ``load_demo``; they are for a laptop only."""

from dataclasses import dataclass

from django.db import transaction

from apps.accounts.models import User


@dataclass(frozen=True)
class DemoPerson:
    username: str
    password: str
    role: str
    place: str


DEMO_PEOPLE = (
    DemoPerson("pi", "demo-pi-pass", "pi", "Protocols"),
    DemoPerson("reviewer1", "demo-reviewer1-pass", "reviewer", "My queue"),
    DemoPerson("reviewer2", "demo-reviewer2-pass", "reviewer", "My queue"),
    DemoPerson("reviewer3", "demo-reviewer3-pass", "reviewer", "My queue"),
    DemoPerson("auditor", "demo-auditor-pass", "auditor", "Logs"),
)


@transaction.atomic
def demo_people_ensure() -> dict[str, User]:
    """Create the demo users (or reset their passwords) and return them by username."""
    users = {}
    for person in DEMO_PEOPLE:
        user, _ = User.objects.get_or_create(username=person.username)
        user.set_password(person.password)
        user.save()
        users[person.username] = user
    return users
