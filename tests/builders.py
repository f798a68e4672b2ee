"""Study builders for every app's tests: drafts the freeze gate accepts, and the freeze itself.

A test that needs a frozen version gets one the way a PI does: ``freeze`` calls the protocols
app's ``version_freeze``, so the whole gate runs (sections, parameters, design, roster and
schedule, rubric, the computability gate) and the components' ``on_freeze`` store what they
store (the administration schedule, the canonical document and its blob, the log entry). Nothing
here sets ``state="frozen"`` by hand: a test that deliberately needs a state the gate would
refuse builds it itself, with a comment saying why.

The studies are small on purpose (one level, one evaluand, one repetition unless asked), so the
gate's run of the plan on synthetic data stays cheap.

- ``ready_for_freeze(version, user)``: give a draft what the gate asks and it lacks.
- ``freeze(version, user=None)``: ``ready_for_freeze``, then ``version_freeze``.
- ``build_draft(...)``: a draft with items × levels, keys, a roster and the schedule's parameters.
- ``frozen_study(...)``: a frozen study with one response per cell, a rubric, a PI and reviewers.
- ``FrozenVersionFactory``: factory_boy's face of ``freeze`` (a small frozen version).

The analysis tests' large scored studies (``tests/analysis/builders.py``: ``opb_study``,
``xstest_study``) freeze through ``freeze`` too. Still outside it: the queue benchmarks
(``frozen_by_hand`` below), each saying why.
"""

import math
from dataclasses import dataclass, field

from apps.accounts.models import Role, User
from apps.items.models import Cell, Factor, FactorRole, Item, KeyUnit
from apps.items.selectors import HarmState, harm_reviewers_eligible, item_harm_states
from apps.items.services import harm_review_open, harm_review_submit
from apps.protocols.models import SECTION_FIELDS, AnalysisParameter, ProtocolVersion
from apps.protocols.plans import pipeline_declaration, version_pipeline
from apps.protocols.services import version_freeze
from apps.raters.models import Rubric
from apps.raters.services import rubric_apply_template
from apps.responses.models import Administration, RosterEntry
from apps.responses.services import evaluand_register, roster_enroll
from tests.factories import (
    AttemptFactory,
    CellFactory,
    FamilyFactory,
    ItemFactory,
    KeyUnitFactory,
    LevelFactory,
    MembershipFactory,
    ProtocolVersionFactory,
    ResponseFactory,
    RosterEntryFactory,
    UserFactory,
)

# Text for every section: the gate refuses an empty section or one holding only the outline.
SECTIONS = {name: f"The {name}." for name in SECTION_FIELDS}


def set_parameters(version: ProtocolVersion, **values) -> None:
    """Add the plan parameters ``values`` to a draft, each held as the kind its pipeline
    declares, with the declared choices (else ``integer`` for an int, ``number`` for anything
    else)."""
    declaration = pipeline_declaration(version_pipeline(version) or "")
    start = AnalysisParameter.objects.filter(version=version).count()
    for position, (name, value) in enumerate(values.items(), start=start):
        declared = declaration.parameter(name) if declaration else None
        AnalysisParameter.objects.create(
            version=version,
            name=name,
            label=name,
            kind=declared.kind if declared else "integer" if isinstance(value, int) else "number",
            choices=list(declared.choices) if declared else [],
            value=str(value),
            position=position,
        )


def ready_for_freeze(version: ProtocolVersion, user: User) -> ProtocolVersion:
    """Give the draft ``version`` what the freeze gate asks and it lacks, leaving what it has:
    text in empty sections, the plan's ``seed`` and ``repetitions`` (the number of design-factor
    combinations, 1 without factors), an item with a keyed
    cell when the design is empty, a unit in every present cell without a key, every unwritten
    cell recorded absent (with a reason), a harm-constancy review (two blind reviewers, both
    "not more harmful") of every harm-constant item that needs one, one evaluand on an empty
    roster, and the ``opb`` rubric when it has none."""
    empty = {name: text for name, text in SECTIONS.items() if not getattr(version, name).strip()}
    if empty:
        ProtocolVersion.objects.filter(pk=version.pk).update(**empty)
        version.refresh_from_db()
    held = set(AnalysisParameter.objects.filter(version=version).values_list("name", flat=True))
    # One task block per repetition: the gate asks for a multiple of the design factors'
    # combinations (seed 002, "task blocks"), so the smallest such multiple.
    combinations = math.prod(
        len(f.levels) for f in Factor.objects.filter(version=version, role=FactorRole.DESIGN)
    )
    defaults = {"seed": 7, "repetitions": combinations}
    set_parameters(version, **{k: v for k, v in defaults.items() if k not in held})
    if not Item.objects.filter(version=version).exists():
        level = version.levels.first() or LevelFactory(version=version, ordinal=0, code="L0")
        family = version.families.first() or FamilyFactory(
            version=version, code="A", role="discrimination_control"
        )
        CellFactory(version=version, item=ItemFactory(version=version, family=family), level=level)
    for cell in Cell.objects.filter(version=version, absent=False, key_units__isnull=True):
        KeyUnit.objects.create(version=version, cell=cell, position=1, text="the unit")
    _complete_design(version)
    if not RosterEntry.objects.filter(version=version).exists():
        RosterEntryFactory(version=version, code="alpha", position=0)
    if not Rubric.objects.filter(version=version).exists():
        rubric_apply_template(version=version, template="opb")
    return version


def _complete_design(version: ProtocolVersion) -> None:
    """Fill every unwritten cell: a harm-constant item's first and last levels are written
    (prompt and key: its review compares the two), any other cell is recorded absent; then
    validate every harm-constant item's review that was never opened."""
    levels = list(version.levels.order_by("ordinal"))
    edges = {levels[0].pk, levels[-1].pk} if len(levels) > 1 else set()
    written = set(Cell.objects.filter(version=version).values_list("item_id", "level_id"))
    missing = [
        (item, level)
        for item in Item.objects.filter(version=version).select_related("family")
        for level in levels
        if (item.pk, level.pk) not in written
        # above a family's binding stopping rule, a cell must not exist at all
        and (item.family.max_level is None or level.ordinal <= item.family.max_level)
    ]
    for item, level in missing:
        if item.family.role == "harm_constant" and level.pk in edges:
            cell = CellFactory(version=version, item=item, level=level)
            KeyUnitFactory(version=version, cell=cell, position=1)
        else:
            CellFactory(
                version=version,
                item=item,
                level=level,
                prompt="",
                absent=True,
                absent_reason="Not written in this test's design.",
            )
    states = item_harm_states(version)
    due = [pk for pk, harm in states.items() if harm.state == HarmState.NOT_OPENED]
    if not due:
        return
    for _ in range(2 - len(harm_reviewers_eligible(protocol_id=version.protocol_id))):
        MembershipFactory(protocol=version.protocol, role=Role.REVIEWER)
    for review in harm_review_open(version=version):
        harm_review_submit(
            review=review,
            reviewer=review.reviewer,
            verdict="not_more_harmful",
            forms_sha256=states[review.item_id].forms_sha256,
        )


def freeze(version: ProtocolVersion, user: User | None = None) -> ProtocolVersion:
    """Freeze the draft ``version`` through ``version_freeze`` (the whole gate), after
    ``ready_for_freeze``; ``user`` (default: its author) is who froze it. Returns the frozen
    version; ``version`` itself is refreshed too. Raises FreezeRefused when the gate still
    refuses: what the draft holds is wrong, and the test should say so."""
    user = user or version.created_by
    ready_for_freeze(version, user)
    frozen = version_freeze(version=version, user=user)
    version.refresh_from_db()
    return frozen


def build_draft(
    *,
    protocol,
    user,
    items: int | list[str] = 3,
    levels: tuple[str, ...] = ("L0",),
    evaluands: tuple[str, ...] | dict[str, str] = ("alpha", "beta"),
    repetitions: int | None = 1,
    seed: int | None = 7,
    absent: tuple[str, ...] = (),
    label: str = "1.0",
):
    """A draft version with ``items`` items (``it-1`` …, or the codes given) at ``levels``, each
    present cell with a one-unit key, a roster of ``evaluands`` (codes, with model
    ``model-<code>``, or a dict code → model) and the plan's ``repetitions`` and ``seed``."""
    version = ProtocolVersionFactory(protocol=protocol, label=label, created_by=user, **SECTIONS)
    level_rows = [
        LevelFactory(version=version, ordinal=i, code=code) for i, code in enumerate(levels)
    ]
    # Not harm-constant: a multi-level harm-constant family would need its review first.
    family = FamilyFactory(version=version, code="A", role="discrimination_control")
    codes = items if isinstance(items, list) else [f"it-{n}" for n in range(1, items + 1)]
    for code in codes:
        item = ItemFactory(version=version, family=family, code=code)
        for level in level_rows:
            key = f"{item.code}@{level.code}"
            if key in absent:
                CellFactory(
                    version=version,
                    item=item,
                    level=level,
                    prompt="",
                    absent=True,
                    absent_reason="cannot be written at this level without changing its content",
                )
            else:
                cell = CellFactory(version=version, item=item, level=level)
                KeyUnitFactory(version=version, cell=cell, position=1)
    models = evaluands if isinstance(evaluands, dict) else {c: f"model-{c}" for c in evaluands}
    for code, model in models.items():
        evaluand, _ = evaluand_register(user=user, label=f"Model {code}", model=model)
        roster_enroll(version=version, evaluand=evaluand, code=code, user=user)
    values = {"repetitions": repetitions, "seed": seed}
    set_parameters(version, **{k: v for k, v in values.items() if v is not None})
    return version


@dataclass
class Study:
    version: ProtocolVersion
    pi: object
    reviewers: list
    responses: list = field(default_factory=list)
    cells: list = field(default_factory=list)


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
    """A frozen version with ``responses`` responses, one per cell, a rubric from ``template``,
    a PI and ``reviewers`` reviewer accounts. The cells are ``responses / levels`` items, each
    written at every one of ``levels`` levels (the gate wants the grid full), the items taking
    turns over ``families`` families; one evaluand, one repetition. Each cell has ``units`` key
    units (the first not executable), at least one (the gate wants a key).
    ``study.responses[n]`` answers ``study.cells[n]``; ``texts[n]`` is its text when given.
    ``before_freeze(cells)`` runs on the draft just before the freeze."""
    if responses % levels:
        raise ValueError(f"{responses} responses do not fill {levels} levels of whole items")
    version = version or ProtocolVersionFactory()
    pi = MembershipFactory(protocol=version.protocol, role=Role.PI).user
    defaults = {"scores_per_response": 2, "seed": 17, "repetitions": 1}
    set_parameters(version, **(defaults | (parameters or {})))
    rubric_apply_template(version=version, template=template)
    level_rows = [LevelFactory(version=version, ordinal=n, code=f"L{n}") for n in range(levels)]
    # Not harm-constant: a multi-level harm-constant family would need its review first.
    family_rows = [
        FamilyFactory(version=version, role="discrimination_control") for _ in range(families)
    ]
    cells = []
    for n in range(responses):
        if n % levels == 0:
            item = ItemFactory(family=family_rows[(n // levels) % families], version=version)
        level = level_rows[n % levels]
        cell = CellFactory(item=item, version=version, level=level, prompt=f"Prompt number {n}.")
        for position in range(1, max(units, 1) + 1):
            KeyUnitFactory(cell=cell, version=version, position=position, executable=position > 1)
        cells.append(cell)
    if before_freeze is not None:
        before_freeze(cells)
    freeze(version, pi)
    study = Study(version=version, pi=pi, reviewers=[], cells=cells)
    for _ in range(reviewers):
        user = UserFactory()
        MembershipFactory(user=user, protocol=version.protocol, role=Role.REVIEWER)
        study.reviewers.append(user)
    # The freeze generated the schedule: one administration per cell (one evaluand, once).
    administrations = {a.cell_id: a for a in Administration.objects.filter(version=version)}
    for n, cell in enumerate(cells):
        attempt = AttemptFactory(administration=administrations[cell.pk], version=version)
        text = texts[n] if texts else f"Response text {n} with some words in it."
        study.responses.append(
            ResponseFactory(
                attempt=attempt, version=version, text=text, word_count=len(text.split())
            )
        )
    return study


class FrozenVersionFactory(ProtocolVersionFactory):
    """A small version frozen through ``version_freeze`` (``freeze``): one item with a keyed
    cell, one evaluand, the ``opb`` rubric. Its ``created_by`` froze it."""

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        draft = super()._create(model_class, *args, **kwargs)
        return freeze(draft, draft.created_by)


def frozen_by_hand(version: ProtocolVersion) -> None:
    """Mark ``version`` frozen without the freeze gate, for the queue benchmarks only
    (``tests/benchmarks/test_queue_benchmark.py``, ``queue_vs_label_studio.py``): their schedule
    (hundreds of thousands of administrations) is written by SQL in a fixed order, which
    ``version_freeze`` would replace by the seeded one, and the gate's run of the plan is not
    what they measure. Every test freezes through ``freeze``."""
    ProtocolVersion.objects.filter(pk=version.pk).update(state="frozen", sha256="ab" * 32)
    version.refresh_from_db()


def api_url(version: ProtocolVersion, tail: str) -> str:
    """The API address of ``version``'s resource ``tail`` by code and label (the id-keyed
    ``/api/v1/versions/<id>/…`` routes only redirect there)."""
    return f"/api/v1/protocols/{version.protocol.code}/versions/{version.label}/{tail}"
