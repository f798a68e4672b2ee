"""The computability gate's sample of a large design, taken by the design's own structure (issue
#32 §2).

The gate runs the plan's pipeline on synthetic data of the draft; a design of tens of thousands
of administrations is checked on a sample. A sample of "the first N administrations" can leave
a design without one complete task block, and then refuses a plan whose real data could be
analysed (seed 002 with 64 fixtures per sub-study, one block each, 8 repetitions: the first
1,000 administrations held repetitions 1–3 of 8, never a whole block). So the sample keeps the
units an analysis clusters on whole, and only their number is reduced:

- **every family** (and so every sub-study, which is a set of families) is kept;
- **whole task blocks**: repetitions are kept in whole rounds of D repetitions, D the number of
  design-factor combinations (``apps.items.schedule``: a task block holds each combination once,
  round = (repetition − 1) // D); D = 1 without design factors;
- **whole items**: an item is kept with every one of its cells; an item kept brings the item it is
  linked to (``base_item``, OPB-01 §5's disclosure pairs) and every item the plan's parameters
  name (seed 002's controls) is kept;
- **the evaluands** are reduced last, since every evaluand gets the same cells.

Nothing is reduced below the plan's own floors: per family, items × rounds kept is at least
``floor`` (the largest of ``MIN_SAMPLE_CLUSTERS`` and every integer plan parameter its pipeline
declares in a unit of clusters — ``min_clusters``, ``min_task_blocks``, ``min_families`` — at
the plan's value, else the declared default), or the whole family when it has fewer. So a
design whose real data would meet a floor meets it in the sample too, and one whose real data
would not is checked whole and refused as its real data would be.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from apps.core.inputs import whole_number

# The sample's target size in administrations: a design above it is reduced by its structure.
SAMPLE_ADMINISTRATIONS = 2_000
# Items × rounds kept per family at least, whatever the plan's floors (all when it has fewer).
MIN_SAMPLE_CLUSTERS = 20
# Units of the integer parameters that set a minimum number of clusters.
CLUSTER_UNITS = ("clusters", "task blocks", "families", "items")

CellKey = tuple[str, int]  # (item code, level ordinal)


@dataclass(frozen=True)
class Structure:
    """A design as the gate samples it: its administered cells (item, level ordinal), each
    item's family, the items linked to a base item, the evaluands, the repetitions, the task
    block's size D, the cluster floor and the items the plan names."""

    cells: list[CellKey]
    family_of: dict[str, str]
    linked: dict[str, str]
    evaluands: list[str]
    repetitions: int
    block: int
    floor: int
    named: set[str]

    @property
    def administrations(self) -> int:
        return len(self.cells) * len(self.evaluands) * self.repetitions


@dataclass(frozen=True)
class Sample:
    """The cells, evaluands and repetitions the gate checks, and what it left out, in words
    (empty when nothing was)."""

    cells: list[CellKey]
    evaluands: list[str]
    repetitions: int
    note: str

    @property
    def administrations(self) -> int:
        return len(self.cells) * len(self.evaluands) * self.repetitions


def block_size(factors: Iterable[Any]) -> int:
    """D: the number of design-factor combinations (``FactorSpec``s with role ``design``); 1
    without any."""
    return math.prod(len(f.levels) for f in factors if f.role == "design") or 1


def cluster_floor(declaration: Any, parameters: dict[str, str]) -> int:
    """The fewest items × rounds per family the sample keeps: ``MIN_SAMPLE_CLUSTERS``, or more
    when an integer parameter the pipeline declares in a unit of clusters asks for more (the
    plan's value, else the declared default)."""
    floor = MIN_SAMPLE_CLUSTERS
    for spec in getattr(declaration, "parameters", ()) or ():
        if spec.kind != "integer" or spec.unit not in CLUSTER_UNITS:
            continue
        text = (parameters.get(spec.name) or spec.default or "").strip()
        number = whole_number(text)
        if number is not None:
            floor = max(floor, number)
    return floor


def named_items(parameters: dict[str, str], items: set[str]) -> set[str]:
    """The item codes a plan parameter's value names (a JSON value's strings, or the text)."""
    named: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, str):
            if value in items:
                named.add(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for text in parameters.values():
        text = (text or "").strip()
        if not text:
            continue
        try:
            walk(json.loads(text))
        except ValueError:
            walk(text)
    return named


def _items_kept(structure: Structure, per_family: dict[str, int]) -> set[str]:
    by_family: dict[str, list[str]] = defaultdict(list)
    for item in dict.fromkeys(item for item, _ in structure.cells):
        by_family[structure.family_of[item]].append(item)
    kept: set[str] = set()
    for family, members in by_family.items():
        kept.update(sorted(members)[: per_family[family]])
    kept |= structure.named & set(structure.family_of)
    # A kept item brings its base item (OPB-01 §5's pairs), and the base brings nothing more.
    kept |= {structure.linked[i] for i in kept if i in structure.linked}
    return kept


def structural_sample(structure: Structure, *, budget: int = SAMPLE_ADMINISTRATIONS) -> Sample:
    """The part of ``structure`` the gate checks: all of it when it has at most ``budget``
    administrations, else whole rounds, then whole items per family, then evaluands, fewer of
    each, every family kept, never below ``structure.floor`` items × rounds per family (see the
    module docstring). The sample may exceed ``budget`` where the floors ask for more."""
    cells, evaluands, repetitions = structure.cells, structure.evaluands, structure.repetitions
    if structure.administrations <= budget or not cells:
        return Sample(cells, evaluands, repetitions, "")
    block = structure.block if repetitions % structure.block == 0 else 1
    rounds = repetitions // block
    items_of: dict[str, set[str]] = defaultdict(set)
    cells_of: dict[str, int] = defaultdict(int)
    for item, _ in cells:
        items_of[structure.family_of[item]].add(item)
        cells_of[item] += 1
    sizes = {f: len(members) for f, members in items_of.items()}
    per_cell = len(evaluands) * block

    def wanted(family: int) -> int:  # items × rounds a family keeps: its floor, or all it has
        return min(structure.floor, family * rounds)

    # 1. Fewer whole rounds, while every family keeps its floor with all its items.
    kept_rounds = max(math.ceil(wanted(n) / n) for n in sizes.values())
    kept_rounds = max(1, min(rounds, max(kept_rounds, budget // (len(cells) * per_cell))))
    # 2. Fewer whole items per family, each family keeping its floor over the rounds kept.
    share = budget / (len(cells) * per_cell * kept_rounds)
    per_family = {
        f: min(n, max(math.ceil(wanted(n) / kept_rounds), math.floor(n * share)))
        for f, n in sizes.items()
    }
    kept_items = _items_kept(structure, per_family)
    kept_cells = [c for c in cells if c[0] in kept_items]
    # 3. Fewer evaluands: each gets the same cells, so one is as telling as many.
    size = len(kept_cells) * block * kept_rounds
    kept_evaluands = evaluands[: max(1, min(len(evaluands), budget // max(size, 1)))]

    notes = []
    if kept_rounds < rounds:
        unit = f"whole task blocks of {block} repetitions" if block > 1 else "repetitions"
        notes.append(f"repetitions 1–{kept_rounds * block} of {repetitions} ({unit})")
    if len(kept_items) < sum(sizes.values()):
        families = ", ".join(
            f"{f} {len(items_of[f] & kept_items)} of {n}" for f, n in sorted(sizes.items())
        )
        notes.append(f"whole items, every family kept (items per family: {families})")
    if len(kept_evaluands) < len(evaluands):
        notes.append(f"{len(kept_evaluands)} of {len(evaluands)} evaluands")
    return Sample(kept_cells, kept_evaluands, kept_rounds * block, "; ".join(notes))
