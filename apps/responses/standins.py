"""STAND-INS, to be removed once the apps that own these land on main.

Nothing here is the real thing; each function names what replaces it:

- ``design_schedule_inputs`` and ``administration_schedule`` → ``apps/items/schedule.py``
  (branch ``items``): the pure schedule generator. The stand-in shuffles cell × evaluand within
  one block per repetition with ``random.Random(seed)`` and draws factor levels at random; the
  real generator balances and counterbalances.
- ``version_create_standin`` and ``version_freeze_standin`` → ``apps/protocols/services.py``
  (branch ``protocols``): version creation from the plan template, and the freeze gate (checks,
  ``on_freeze``, the canonical document stored as a blob, the ``freeze`` log entry). The freeze
  stand-in runs every component's ``on_freeze`` and sets the state; it builds no blob and writes
  no log entry.

Only the XSTest builder and the tests call these, each through one small function, so that the
switch is a one-line change at each place.
"""

import random
from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from apps.items.models import Cell
from apps.protocols.components import registered_components
from apps.protocols.models import AnalysisParameter, ParameterKind, ProtocolVersion, VersionState


def cell_key(item_code: str, level_code: str) -> str:
    """How the schedule names a cell: ``<item code>@<level code>`` (``xs-1@L0``)."""
    return f"{item_code}@{level_code}"


def design_schedule_inputs(version: ProtocolVersion) -> dict[str, Any]:
    """STAND-IN. The cells to administer (present ones, design order) and the version's factors."""
    cells = (
        Cell.objects.filter(version=version, absent=False)
        .select_related("item", "level")
        .order_by("item__code", "level__ordinal")
    )
    factors = [
        {"name": factor.name, "levels": list(factor.levels), "role": factor.role}
        for factor in version.factors.order_by("name")
    ]
    return {"cells": [cell_key(c.item.code, c.level.code) for c in cells], "factors": factors}


def administration_schedule(
    *,
    cells: Sequence[str],
    evaluands: Sequence[str],
    repetitions: int,
    seed: int,
    factors: Sequence[dict] = (),
) -> list[dict[str, Any]]:
    """STAND-IN. The ordered schedule: one entry per cell × evaluand × repetition.

    Each entry is ``{"cell", "evaluand", "repetition", "block", "assignment"}``; the same inputs
    always give the same list.
    """
    rng = random.Random(seed)
    schedule = []
    for repetition in range(1, repetitions + 1):
        block = [(cell, evaluand) for cell in cells for evaluand in evaluands]
        rng.shuffle(block)
        for cell, evaluand in block:
            assignment = {f["name"]: rng.choice(list(f["levels"])) for f in factors}
            schedule.append(
                {
                    "cell": cell,
                    "evaluand": evaluand,
                    "repetition": repetition,
                    "block": repetition,
                    "assignment": assignment,
                }
            )
    return schedule


@transaction.atomic
def version_create_standin(
    *, protocol, user, label: str = "1.0", parameters: dict[str, str] | None = None, **sections
) -> ProtocolVersion:
    """STAND-IN. A draft version with ``seed`` and ``repetitions`` parameters (and any others)."""
    version = ProtocolVersion(protocol=protocol, label=label, created_by=user, **sections)
    version.full_clean()
    version.save()
    for position, (name, value) in enumerate((parameters or {}).items()):
        AnalysisParameter.objects.create(
            version=version,
            name=name,
            label=name.replace("_", " "),
            kind=ParameterKind.INTEGER if str(value).lstrip("-").isdigit() else ParameterKind.TEXT,
            value=str(value),
            position=position,
        )
    return version


@transaction.atomic
def version_freeze_standin(*, version: ProtocolVersion, user) -> ProtocolVersion:
    """STAND-IN. Run every component's ``on_freeze`` while the version is a draft, then freeze it.

    The order matters on PostgreSQL: rows that carry ``version_id`` (the schedule) can only be
    inserted while the version row still says draft.
    """
    for component in registered_components():
        if component.on_freeze is not None:
            component.on_freeze(version)
    version.state = VersionState.FROZEN
    version.frozen_by = user
    version.frozen_at = timezone.now()
    version.save()
    return version
