"""The demo study that ``make run`` loads: an OPB-01-shaped protocol authored by the project."""

from django.db import transaction

from apps.accounts.models import Role
from apps.accounts.services import membership_grant
from apps.demo.people import demo_people_ensure
from apps.items.demo import demo_design_build, demo_harm_review_complete
from apps.items.services import harm_review_open
from apps.protocols.models import Protocol, ProtocolVersion, VersionState
from apps.protocols.opb01 import CODE as OPB01_CODE
from apps.protocols.opb01 import opb01_history_build
from apps.protocols.services import protocol_create
from apps.raters.models import Rubric
from apps.raters.services import rubric_apply_template
from apps.responses.demo import demo_roster_enroll

DEMO_CODE = "DEMO-OPB"
REVIEWERS = ("reviewer1", "reviewer2", "reviewer3")


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
    for username in REVIEWERS:
        membership_grant(user=users[username], protocol_id=protocol.pk, role=Role.REVIEWER)
    membership_grant(user=users["auditor"], protocol_id=protocol.pk, role=Role.AUDITOR)
    # The demo's design on its draft; its harm-constancy review is the reviewers' first task.
    draft = protocol.versions.filter(state=VersionState.DRAFT).order_by("created_at").last()
    if draft is not None and not draft.items.exists():
        demo_design_build(draft)
        harm_review_open(version=draft)
    if draft is not None:
        demo_roster_enroll(version=draft, user=users["pi"])
    if draft is not None and not Rubric.objects.filter(version=draft).exists():
        rubric_apply_template(version=draft, template="opb")

    def opb01_design(version: ProtocolVersion) -> None:
        # OPB-01 v1.1 freezes, so its design must be complete, the review included.
        for username in REVIEWERS:
            membership_grant(
                user=users[username], protocol_id=version.protocol_id, role=Role.REVIEWER
            )
        demo_design_build(version)
        demo_harm_review_complete(version)
        demo_roster_enroll(version=version, user=users["pi"])
        # The frozen version says how responses are scored (OPB-01 §3's rubric).
        if not Rubric.objects.filter(version=version).exists():
            rubric_apply_template(version=version, template="opb")

    # OPB-01's own history (seed 000): v1.0 refused at the freeze gate, v1.1 frozen.
    opb01 = Protocol.objects.filter(code=OPB01_CODE).first()
    if opb01 is None:
        opb01 = opb01_history_build(pi=users["pi"], prepare=opb01_design).protocol
    membership_grant(user=users["auditor"], protocol_id=opb01.pk, role=Role.AUDITOR)
    return f"Demo loaded: protocols {protocol.code} and {opb01.code} with {len(users)} people."
