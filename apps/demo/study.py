"""The demo study that ``make run`` loads: an OPB-01-shaped protocol authored by the project."""

from django.db import transaction

from apps.accounts.models import Role
from apps.accounts.services import membership_grant
from apps.demo.people import demo_people_ensure
from apps.protocols.models import Protocol
from apps.protocols.opb01 import CODE as OPB01_CODE
from apps.protocols.opb01 import opb01_history_build
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
    # OPB-01's own history (seed 000): v1.0 refused at the freeze gate, v1.1 frozen.
    opb01 = Protocol.objects.filter(code=OPB01_CODE).first()
    if opb01 is None:
        opb01 = opb01_history_build(pi=users["pi"]).protocol
    membership_grant(user=users["auditor"], protocol_id=opb01.pk, role=Role.AUDITOR)
    return f"Demo loaded: protocols {protocol.code} and {opb01.code} with {len(users)} people."
