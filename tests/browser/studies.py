"""Small studies for the browser journeys, built through the real services where a journey
reads what they write (the freeze, the amendment, the deviation log)."""

from apps.accounts.models import Role
from apps.deviations.services import deviation_record
from apps.protocols.services import protocol_create, version_amend, version_freeze, version_update
from apps.raters.services import rubric_apply_template
from apps.responses.services import evaluand_register, roster_enroll
from tests.factories import (
    CellFactory,
    FamilyFactory,
    ItemFactory,
    KeyUnitFactory,
    LevelFactory,
    MembershipFactory,
)
from tests.protocols.conftest import OPB_VALUES, SECTIONS


def design_and_roster(version, user) -> None:
    """Two items × two levels with one-unit keys, and two evaluands on the roster: what the
    freeze gate asks of a design, without authoring it page by page. The plan's decision
    table is emptied: OPB-01's §8 rules read Families A and B and the force arm, which this
    design lacks, and the computability gate refuses rules that can never be evaluated."""
    version_update(version=version, user=user, decision_table=[])
    levels = [LevelFactory(version=version, ordinal=i, code=f"L{i}") for i in range(2)]
    family = FamilyFactory(version=version, code="B", role="discrimination_control")
    for n in (1, 2):
        item = ItemFactory(version=version, family=family, code=f"B0{n}")
        for level in levels:
            cell = CellFactory(version=version, item=item, level=level)
            KeyUnitFactory(version=version, cell=cell, position=1)
    for code in ("alpha", "beta"):
        evaluand, _ = evaluand_register(user=user, label=f"Model {code}", model=f"model-{code}")
        roster_enroll(version=version, evaluand=evaluand, code=code, user=user)


def logged_protocol(*, code: str, pi, auditor):
    """A protocol whose log holds a freeze, an amendment, its freeze and two hand-recorded
    entries (a deviation and a reorder); ``auditor`` is its auditor."""
    from datetime import date

    protocol = protocol_create(user=pi, code=code, title=f"{code} logged study", template="opb")
    draft = protocol.versions.get(label="1.0")
    version_update(version=draft, user=pi, sections=SECTIONS, parameters=OPB_VALUES)
    design_and_roster(draft, pi)
    rubric_apply_template(version=draft, template="opb")
    frozen = version_freeze(version=draft, user=pi)
    amendment = version_amend(version=frozen, user=pi)
    version_update(
        version=amendment,
        user=pi,
        amendment_rationale="The pilot showed Family B must stop at L1.",
        sections={"stopping_rules": "Family B stops at L1."},
    )
    version_freeze(version=amendment, user=pi)
    deviation_record(
        protocol=protocol,
        user=pi,
        rationale="Administration of B02 at L1 ran a day late after a provider outage.",
        occurred_on=date(2026, 11, 2),
    )
    deviation_record(
        protocol=protocol,
        user=pi,
        kind="reorder",
        rationale="Items B01 and B02 were administered in swapped order on the second day.",
        occurred_on=date(2026, 11, 3),
    )
    MembershipFactory(protocol=protocol, user=auditor, role=Role.AUDITOR)
    return protocol
