"""The administration schedule: which cell each evaluand receives, in which order, under which
factor levels. Pure functions over plain keys — no ORM, no settings — so the responses app can
store the result at freeze and anyone can regenerate it from the frozen document and the seed.

What the schedule guarantees
----------------------------
- **Complete and balanced.** Every cell × evaluand × repetition occurs exactly once.
- **Drift spread across evaluands** (CRUCIBLE §8: "balanced across evaluands, scenario families,
  and autonomy rungs to reduce temporal and provider-service confounding"). Repetitions are
  given in *rounds*: all cells for every evaluand before the next round starts. With
  ``block_by="cell"`` (the default) one block is one cell of one round given to every evaluand
  back to back, so whatever drifts over the study's days (a provider update, a rate limit) hits
  every evaluand at the same point of the schedule; the evaluands' order inside a block is a
  random base order rotated by one place per block (a cyclic Latin square), so each evaluand is
  first, second, … equally often. With ``block_by="evaluand"`` one block is one evaluand's whole
  pass through a round's cells (for surfaces that must be run in one session window); the cells
  come in the same order for every evaluand of the round and the evaluands' order rotates from
  round to round.
- **Cells interleaved by stratum.** Within a round the cells are in a fresh random order; when
  ``strata`` are given (family and level, say) the order is a *stratified random interleaving*:
  the i-th of a stratum's n_s cells (in random order) is placed at (i + U)/n_s with U uniform on
  [0, 1), and cells are sorted by that place. In every prefix of m cells of a round, a stratum's
  count then differs from its share m·n_s/n by at most 1 + S·n_s/n (S strata; at most 2 for
  strata of equal size), so no family or level is bunched at the end of a round.
- **Factorial designs** (seed 002's randomised 2×2×2 with counterbalancing). Factors with role
  ``design`` are fully crossed: with D combinations of their levels, a *task block* is the D
  repetitions of one cell for one evaluand in one round (so ``repetitions`` must be a multiple of
  D, and the number of rounds is repetitions / D), and inside each task block every design
  combination occurs exactly once, in random order. Factors with role ``counterbalanced`` (tool
  names, presentation order) are crossed into K combinations and rotated Latin-square fashion:
  the t-th task block of an evaluand gives design combination d the counterbalancing
  combination (t + o_e + τ(d)) mod K, where o_e is a random offset per evaluand and τ a random
  map of the design combinations onto offsets. Hence, for every evaluand and every design
  combination, each counterbalancing combination occurs exactly B/K times over the evaluand's B
  task blocks when K divides B (and within one more or less otherwise); when K divides D, each
  task block also holds every counterbalancing combination D/K times. Which combination is
  "first" is itself randomised. The paired-task-block cluster of seed 002's analysis is
  (cell, evaluand, round), with round = (repetition − 1) // D.

Why ``random.Random`` and not numpy
-----------------------------------
The schedule must be the same for the same seed on every machine and every later Python, or a
frozen schedule could not be regenerated from its seed. Python documents exactly one guarantee
for its generator: seeded with the same integer, ``Random.random()`` keeps producing the same
sequence across versions and platforms (Mersenne Twister, 53-bit floats). ``shuffle``,
``randrange`` and numpy ``Generator`` methods carry no such promise (numpy's NEP 19 freezes only
the legacy ``RandomState``; ``randrange`` changed in Python 3.2 and 3.12). So only ``random()`` is
called here, and shuffling is our own Fisher–Yates over ``int(random() * n)`` (its bias is below
n / 2**53). Inputs are sorted first, so the schedule depends on the sets of cells and evaluands
and the seed — not on the order a database happened to return them in. A test pins the digest
of one schedule so that any drift in the generator fails loudly.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from apps.core.canonical import canonical_json, sha256_hex

CellKey = tuple[str, str]
"""A cell named by natural keys: ``("a-03", "L2")`` (item code, level code)."""

DESIGN = "design"
COUNTERBALANCED = "counterbalanced"
BLOCK_BY = ("cell", "evaluand")


@dataclass(frozen=True)
class FactorSpec:
    """A factor of the design: its name, its levels in order, and whether it is a randomised
    design factor (``"design"``) or a counterbalanced nuisance factor (``"counterbalanced"``)."""

    name: str
    levels: tuple[str, ...]
    role: str = DESIGN


@dataclass(frozen=True, eq=True)
class ScheduleEntry:
    """One administration: position (1-based, in time order), the block it belongs to (1-based,
    in time order), the cell, the evaluand's code, the repetition (1-based) and the levels of
    every factor for this administration."""

    position: int
    block: int
    cell: CellKey
    evaluand: str
    repetition: int
    assignment: Mapping[str, str]

    def as_dict(self) -> dict:
        return {
            "position": self.position,
            "block": self.block,
            "item": self.cell[0],
            "level": self.cell[1],
            "evaluand": self.evaluand,
            "repetition": self.repetition,
            "assignment": dict(self.assignment),
        }


class _Stream:
    """The only randomness used: ``random.Random(seed).random()`` (see the module docstring)."""

    def __init__(self, seed: int):
        self._random = random.Random(seed)

    def uniform(self) -> float:
        return self._random.random()

    def below(self, n: int) -> int:
        return min(int(self._random.random() * n), n - 1)

    def shuffled(self, values: Iterable) -> list:
        items = list(values)
        for i in range(len(items) - 1, 0, -1):
            j = self.below(i + 1)
            items[i], items[j] = items[j], items[i]
        return items


def _distinct_sorted(values: Iterable, what: str) -> list:
    items = list(values)
    if not items:
        raise ValueError(f"the schedule needs at least one {what}")
    seen: set = set()
    for value in items:
        if value in seen:
            raise ValueError(f"{what} {value!r} is listed twice")
        seen.add(value)
    return sorted(items)


def _checked_factors(factors: Sequence[FactorSpec]) -> tuple[list[FactorSpec], list[FactorSpec]]:
    names: set[str] = set()
    for factor in factors:
        if factor.name in names:
            raise ValueError(f"factor {factor.name!r} is listed twice")
        names.add(factor.name)
        if factor.role not in (DESIGN, COUNTERBALANCED):
            raise ValueError(
                f"factor {factor.name!r} has role {factor.role!r}; use 'design' or "
                "'counterbalanced'"
            )
        if len(factor.levels) < 2 or len(set(factor.levels)) != len(factor.levels):
            raise ValueError(f"factor {factor.name!r} needs at least two distinct levels")
    # Sorted by name: the schedule must not depend on the order factors were declared in.
    ordered = sorted(factors, key=lambda f: f.name)
    return (
        [f for f in ordered if f.role == DESIGN],
        [f for f in ordered if f.role == COUNTERBALANCED],
    )


def _round_order(
    cells: list[CellKey], strata: Mapping[CellKey, Hashable] | None, rng: _Stream
) -> list[CellKey]:
    if not strata:
        return rng.shuffled(cells)
    groups: dict[Hashable, list[CellKey]] = {}
    for cell in cells:
        groups.setdefault(strata[cell], []).append(cell)
    placed: list[tuple[float, CellKey]] = []
    for stratum in sorted(groups, key=repr):
        members = rng.shuffled(groups[stratum])
        for i, cell in enumerate(members):
            placed.append(((i + rng.uniform()) / len(members), cell))
    placed.sort()
    return [cell for _, cell in placed]


def administration_schedule(
    *,
    cells: Iterable[CellKey],
    evaluands: Iterable[str],
    repetitions: int,
    seed: int,
    factors: Sequence[FactorSpec] = (),
    block_by: str = "cell",
    strata: Mapping[CellKey, Hashable] | None = None,
) -> list[ScheduleEntry]:
    """The order of administration for ``cells`` × ``evaluands`` × ``repetitions``.

    ``cells`` are ``(item code, level code)`` keys (present, scheduled cells only), ``evaluands``
    the roster's codes, ``seed`` a non-negative integer (the plan's seed), ``factors`` the design
    and counterbalanced factors, ``block_by`` ``"cell"`` or ``"evaluand"`` and ``strata`` an
    optional stratum per cell (e.g. ``"A/L2"``) to interleave within each round. See the module
    docstring for the guarantees. Returns the entries in administration order.

    Raises ValueError naming the problem: no cells or evaluands, a duplicate, repetitions below 1
    or not a multiple of the number of design combinations, a malformed factor, an unknown
    ``block_by``, a cell without a stratum, or a seed that is not a non-negative integer.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"the seed must be a non-negative integer, not {seed!r}")
    if isinstance(repetitions, bool) or not isinstance(repetitions, int) or repetitions < 1:
        raise ValueError(f"repetitions must be a positive integer, not {repetitions!r}")
    if block_by not in BLOCK_BY:
        raise ValueError(f"block_by must be one of {BLOCK_BY}, not {block_by!r}")
    cell_list = _distinct_sorted((tuple(c) for c in cells), "cell")
    evaluand_list = _distinct_sorted(evaluands, "evaluand")
    if strata is not None:
        missing = [c for c in cell_list if c not in strata]
        if missing:
            raise ValueError(f"cell {missing[0]!r} has no stratum")
    design, counterbalanced = _checked_factors(factors)

    design_combos = list(itertools.product(*(f.levels for f in design)))
    cb_combos = list(itertools.product(*(f.levels for f in counterbalanced)))
    n_design, n_cb = len(design_combos), len(cb_combos)
    if repetitions % n_design:
        raise ValueError(
            f"the design factors cross into {n_design} combinations and each task block holds "
            f"each combination once, so repetitions must be a multiple of {n_design}, "
            f"not {repetitions}"
        )
    rounds = repetitions // n_design

    rng = _Stream(seed)
    cb_label = rng.shuffled(range(n_cb))
    design_offset = [offset % n_cb for offset in rng.shuffled(range(n_design))]
    evaluand_offset = {e: rng.below(n_cb) for e in evaluand_list}
    evaluand_base = rng.shuffled(evaluand_list)
    task_blocks_given = dict.fromkeys(evaluand_list, 0)

    def rotated(shift: int) -> list[str]:
        shift %= len(evaluand_base)
        return evaluand_base[shift:] + evaluand_base[:shift]

    entries: list[ScheduleEntry] = []

    def task_block(block: int, cell: CellKey, evaluand: str, round_index: int) -> None:
        t = task_blocks_given[evaluand]
        task_blocks_given[evaluand] = t + 1
        for j, d in enumerate(rng.shuffled(range(n_design))):
            cb = cb_combos[cb_label[(t + evaluand_offset[evaluand] + design_offset[d]) % n_cb]]
            assignment = {f.name: level for f, level in zip(design, design_combos[d], strict=True)}
            assignment.update({f.name: level for f, level in zip(counterbalanced, cb, strict=True)})
            entries.append(
                ScheduleEntry(
                    position=len(entries) + 1,
                    block=block,
                    cell=cell,
                    evaluand=evaluand,
                    repetition=round_index * n_design + j + 1,
                    assignment=assignment,
                )
            )

    block = 0
    for round_index in range(rounds):
        order = _round_order(cell_list, strata, rng)
        if block_by == "cell":
            for cell in order:
                for evaluand in rotated(block):
                    task_block(block + 1, cell, evaluand, round_index)
                block += 1
        else:
            for evaluand in rotated(round_index):
                for cell in order:
                    task_block(block + 1, cell, evaluand, round_index)
                block += 1
    return entries


def schedule_sha256(entries: Iterable[ScheduleEntry]) -> str:
    """The SHA-256 of the schedule's canonical JSON: equal digests, equal schedules."""
    return sha256_hex(canonical_json([entry.as_dict() for entry in entries]))
