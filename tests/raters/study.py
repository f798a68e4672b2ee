"""Build frozen studies for the rating tests: design and schedule in the draft, then the freeze,
then attempts and responses (as imports add them after a freeze)."""

from dataclasses import dataclass, field

from apps.accounts.models import Role
from apps.protocols.models import AnalysisParameter, ProtocolVersion
from apps.raters.services import rubric_apply_template
from tests.factories import (
    AdministrationFactory,
    AttemptFactory,
    CellFactory,
    EvaluandFactory,
    FamilyFactory,
    ItemFactory,
    KeyUnitFactory,
    LevelFactory,
    MembershipFactory,
    ProtocolVersionFactory,
    ResponseFactory,
    UserFactory,
)


@dataclass
class Study:
    version: ProtocolVersion
    pi: object
    reviewers: list
    responses: list = field(default_factory=list)
    cells: list = field(default_factory=list)


def set_parameters(version, **values) -> None:
    for position, (name, value) in enumerate(values.items()):
        AnalysisParameter.objects.create(
            version=version,
            name=name,
            label=name,
            kind="number",
            value=str(value),
            position=position,
        )


def freeze(version) -> None:
    ProtocolVersion.objects.filter(pk=version.pk).update(state="frozen", sha256="ab" * 32)
    version.refresh_from_db()


def frozen_study(
    *,
    responses: int = 4,
    template: str = "xstest",
    reviewers: int = 3,
    units: int = 0,
    families: int = 1,
    levels: int = 1,
    parameters: dict | None = None,
    version=None,
    texts=None,
    before_freeze=None,
) -> Study:
    """A frozen version with ``responses`` responses spread over families × levels cells, a
    rubric from ``template``, a PI and ``reviewers`` reviewer accounts."""
    version = version or ProtocolVersionFactory()
    set_parameters(version, **({"scores_per_response": 2, "seed": 17} | (parameters or {})))
    rubric_apply_template(version=version, template=template)
    level_rows = [LevelFactory(version=version, ordinal=n) for n in range(levels)]
    family_rows = [FamilyFactory(version=version) for _ in range(families)]
    evaluand = EvaluandFactory()
    administrations, cells = [], []
    for n in range(responses):
        family = family_rows[n % families]
        level = level_rows[(n // families) % levels]
        item = ItemFactory(family=family, version=version)
        cell = CellFactory(item=item, version=version, level=level, prompt=f"Prompt number {n}.")
        for position in range(1, units + 1):
            KeyUnitFactory(cell=cell, version=version, position=position, executable=position > 1)
        cells.append(cell)
        administrations.append(
            AdministrationFactory(cell=cell, version=version, evaluand=evaluand, position=n)
        )
    if before_freeze is not None:
        before_freeze(cells)
    freeze(version)
    study = Study(
        version=version,
        pi=MembershipFactory(protocol=version.protocol, role=Role.PI).user,
        reviewers=[],
        cells=cells,
    )
    for _ in range(reviewers):
        user = UserFactory()
        MembershipFactory(user=user, protocol=version.protocol, role=Role.REVIEWER)
        study.reviewers.append(user)
    for n, administration in enumerate(administrations):
        attempt = AttemptFactory(administration=administration, version=version)
        text = texts[n] if texts else f"Response text {n} with some words in it."
        study.responses.append(
            ResponseFactory(
                attempt=attempt, version=version, text=text, word_count=len(text.split())
            )
        )
    return study
