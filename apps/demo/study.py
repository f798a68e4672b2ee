"""The demo study that ``make run`` loads: an OPB-01-shaped protocol authored by the project."""

from django.db import transaction

from apps.accounts.models import Role
from apps.accounts.services import membership_grant
from apps.demo.people import demo_people_ensure
from apps.protocols.models import Protocol
from apps.protocols.services import protocol_create

DEMO_CODE = "DEMO-OPB"


@transaction.atomic
def demo_study_load() -> str:
    """Create the demo people and study if absent; return a one-line summary."""
    users = demo_people_ensure()
    protocol = Protocol.objects.filter(code=DEMO_CODE).first()
    if protocol is None:
        protocol = protocol_create(
            user=users["pi"],
            code=DEMO_CODE,
            title="Operativity battery, demo (benign domains)",
        )
    for username in ("reviewer1", "reviewer2", "reviewer3"):
        membership_grant(user=users[username], protocol_id=protocol.pk, role=Role.REVIEWER)
    membership_grant(user=users["auditor"], protocol_id=protocol.pk, role=Role.AUDITOR)
    return f"Demo loaded: protocol {protocol.code} with {len(users)} people."
