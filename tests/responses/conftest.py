"""A small study for the response tests: items × levels with keys, a roster, the plan's seed and
repetitions, frozen through the real freeze gate (``version_freeze``)."""

import csv
import io

import pytest

from apps.protocols.models import SECTION_FIELDS
from apps.protocols.services import version_freeze
from apps.raters.models import Rubric
from apps.raters.services.rubric import rubric_apply_template
from apps.responses.models import Administration
from apps.responses.services import evaluand_register, roster_enroll
from tests.factories import (
    AnalysisParameterFactory,
    CellFactory,
    FamilyFactory,
    ItemFactory,
    KeyUnitFactory,
    LevelFactory,
    ProtocolVersionFactory,
)


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
    version = ProtocolVersionFactory(
        protocol=protocol,
        label=label,
        created_by=user,
        **{name: f"The {name}." for name in SECTION_FIELDS},
    )
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
    if repetitions is not None:
        AnalysisParameterFactory(version=version, name="repetitions", value=str(repetitions))
    if seed is not None:
        AnalysisParameterFactory(version=version, name="seed", value=str(seed))
    return version


def freeze(version, user):
    # The rating app's gate wants a rubric before a scored study freezes.
    if not Rubric.objects.filter(version=version).exists():
        rubric_apply_template(version=version, template="opb")
    return version_freeze(version=version, user=user)


def schedule_rows(version):
    """``(item, level, evaluand code, repetition)`` of every administration, in position order."""
    codes = {e.evaluand_id: e.code for e in version.roster.all()}
    return [
        (a.cell.item.code, a.cell.level.code, codes[a.evaluand_id], a.repetition)
        for a in Administration.objects.filter(version=version)
        .select_related("cell__item", "cell__level")
        .order_by("position")
    ]


def csv_bytes(rows: list[dict], columns: list[str] | None = None) -> bytes:
    columns = columns or list(rows[0])
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def answer_rows(version, *, outcome: str = "completed") -> list[dict]:
    """One CSV row per administration, in schedule order, answering each."""
    return [
        {
            "item": item,
            "level": level,
            "evaluand": code,
            "repetition": repetition,
            "terminal_outcome": outcome,
            "response": f"An answer to {item} at {level} from {code}.",
        }
        for item, level, code, repetition in schedule_rows(version)
    ]


@pytest.fixture
def frozen(protocol, pi):
    """A frozen version: 3 items at L0, evaluands alpha and beta, 1 repetition."""
    return freeze(build_draft(protocol=protocol, user=pi), pi)
