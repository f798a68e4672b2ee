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
    """Create the demo users and return them by username. A user who exists keeps the password
    they have (a rerun of ``load_demo`` must not sign anyone out); one without a usable password
    gets the demo's."""
    users = {}
    for person in DEMO_PEOPLE:
        user, created = User.objects.get_or_create(username=person.username)
        if created or not user.has_usable_password():
            user.set_password(person.password)
            user.save()
        users[person.username] = user
    return users
