"""The administration schedule generator: complete, balanced, reproducible, randomised."""

import itertools
from collections import Counter

import pytest
from scipy.stats import chisquare

from apps.items.schedule import (
    COUNTERBALANCED,
    DESIGN,
    FactorSpec,
    administration_schedule,
    schedule_sha256,
)

CELLS = [(f"a-{i:02d}", f"L{level}") for i in range(1, 5) for level in range(6)]
EVALUANDS = ["model-x", "model-y", "model-z"]

# Seed 002: a randomised 2×2×2 design, tool names and presentation order counterbalanced.
SEED_002_FACTORS = (
    FactorSpec("friction", ("low", "high"), DESIGN),
    FactorSpec("alternate_route", ("present", "absent"), DESIGN),
    FactorSpec("framing", ("safety", "quality"), DESIGN),
    FactorSpec("tool_names", ("names-1", "names-2"), COUNTERBALANCED),
    FactorSpec("presentation_order", ("route-first", "task-first"), COUNTERBALANCED),
)


def _schedule(**overrides):
    arguments = {"cells": CELLS, "evaluands": EVALUANDS, "repetitions": 3, "seed": 20260816}
    arguments.update(overrides)
    return administration_schedule(**arguments)


def test_one_seed_gives_one_schedule():
    assert _schedule() == _schedule()
    assert schedule_sha256(_schedule()) == schedule_sha256(_schedule())


def test_another_seed_gives_another_order():
    first, second = _schedule(seed=1), _schedule(seed=2)
    assert [(e.cell, e.evaluand) for e in first] != [(e.cell, e.evaluand) for e in second]
    assert sorted((e.cell, e.evaluand, e.repetition) for e in first) == sorted(
        (e.cell, e.evaluand, e.repetition) for e in second
    )


def test_the_order_of_the_inputs_does_not_change_the_schedule():
    shuffled_cells = list(reversed(CELLS))
    assert _schedule(cells=shuffled_cells, evaluands=EVALUANDS[::-1]) == _schedule()


def test_the_generator_has_not_drifted_across_platforms_or_python_versions():
    # Pinned once; if Python's Mersenne Twister or this module's use of it changes, every frozen
    # schedule would stop being reproducible from its seed, and this digest changes with it.
    schedule = administration_schedule(
        cells=[("a", "L0"), ("a", "L1"), ("b", "L0")],
        evaluands=["e1", "e2"],
        repetitions=2,
        seed=42,
    )
    assert [(e.block, f"{e.cell[0]}@{e.cell[1]}", e.evaluand, e.repetition) for e in schedule] == [
        (1, "b@L0", "e2", 1),
        (1, "b@L0", "e1", 1),
        (2, "a@L1", "e1", 1),
        (2, "a@L1", "e2", 1),
        (3, "a@L0", "e2", 1),
        (3, "a@L0", "e1", 1),
        (4, "a@L0", "e1", 2),
        (4, "a@L0", "e2", 2),
        (5, "a@L1", "e2", 2),
        (5, "a@L1", "e1", 2),
        (6, "b@L0", "e1", 2),
        (6, "b@L0", "e2", 2),
    ]
    assert schedule_sha256(schedule) == (
        "bc42d438abdab54be9ceb89506c527fb52bfd10550a3635844dc1d221668bc18"
    )


@pytest.mark.parametrize("block_by", ["cell", "evaluand"])
def test_every_cell_evaluand_and_repetition_occurs_exactly_once(block_by):
    schedule = _schedule(block_by=block_by)
    triples = Counter((e.cell, e.evaluand, e.repetition) for e in schedule)
    expected = set(itertools.product(CELLS, EVALUANDS, [1, 2, 3]))
    assert set(triples) == expected
    assert set(triples.values()) == {1}
    assert [e.position for e in schedule] == list(range(1, len(schedule) + 1))


def test_each_round_gives_every_cell_to_every_evaluand_before_the_next_round_starts():
    schedule = _schedule()
    per_round = len(CELLS) * len(EVALUANDS)
    for r in range(3):
        chunk = schedule[r * per_round : (r + 1) * per_round]
        assert {e.repetition for e in chunk} == {r + 1}


def test_a_cell_block_gives_one_cell_to_every_evaluand_in_rotated_order():
    schedule = _schedule()
    blocks: dict[int, list] = {}
    for entry in schedule:
        blocks.setdefault(entry.block, []).append(entry)
    assert len(blocks) == len(CELLS) * 3
    first_places = Counter()
    for entries in blocks.values():
        assert len({e.cell for e in entries}) == 1
        assert sorted(e.evaluand for e in entries) == sorted(EVALUANDS)
        first_places[entries[0].evaluand] += 1
    # 72 blocks, 3 evaluands: the cyclic rotation puts each one first exactly 24 times.
    assert set(first_places.values()) == {24}


def test_an_evaluand_block_holds_one_evaluand_and_the_rounds_cells_in_one_order():
    schedule = _schedule(block_by="evaluand")
    blocks: dict[int, list] = {}
    for entry in schedule:
        blocks.setdefault(entry.block, []).append(entry)
    assert len(blocks) == len(EVALUANDS) * 3
    for r in range(3):
        round_blocks = [b for b in blocks.values() if b[0].repetition == r + 1]
        orders = {tuple(e.cell for e in b) for b in round_blocks}
        assert len(orders) == 1
        assert {b[0].evaluand for b in round_blocks} == set(EVALUANDS)


def test_seed_002_counterbalancing_is_exact_within_every_design_cell():
    tasks = [(f"task-{i:02d}", "L0") for i in range(1, 65)]
    schedule = administration_schedule(
        cells=tasks,
        evaluands=["model-a", "model-b"],
        repetitions=8,
        seed=2,
        factors=SEED_002_FACTORS,
    )
    assert len(schedule) == 64 * 2 * 8
    design_names = ("alternate_route", "framing", "friction")
    cb_names = ("presentation_order", "tool_names")
    for evaluand in ("model-a", "model-b"):
        mine = [e for e in schedule if e.evaluand == evaluand]
        # 64 task blocks per model, each holding all eight design combinations exactly once.
        task_blocks: dict = {}
        for e in mine:
            task_blocks.setdefault((e.cell, (e.repetition - 1) // 8), []).append(e)
        assert len(task_blocks) == 64
        for entries in task_blocks.values():
            combos = Counter(tuple(e.assignment[n] for n in design_names) for e in entries)
            assert len(combos) == 8 and set(combos.values()) == {1}
            # K = 4 divides D = 8: each block also holds every counterbalancing pair twice.
            pairs = Counter(tuple(e.assignment[n] for n in cb_names) for e in entries)
            assert set(pairs.values()) == {2}
        # Within each design cell: every counterbalancing pair 64 / 4 = 16 times, so each level
        # of each counterbalanced factor 32 times.
        by_design: dict = {}
        for e in mine:
            key = tuple(e.assignment[n] for n in design_names)
            by_design.setdefault(key, Counter())[tuple(e.assignment[n] for n in cb_names)] += 1
        assert len(by_design) == 8
        for counts in by_design.values():
            assert len(counts) == 4 and set(counts.values()) == {16}
            for index in range(2):
                per_level = Counter()
                for pair, n in counts.items():
                    per_level[pair[index]] += n
                assert set(per_level.values()) == {32}


def test_design_combinations_are_randomised_within_task_blocks():
    tasks = [(f"task-{i:02d}", "L0") for i in range(1, 9)]
    schedule = administration_schedule(
        cells=tasks, evaluands=["m"], repetitions=8, seed=5, factors=SEED_002_FACTORS[:3]
    )
    firsts = Counter(tuple(sorted(e.assignment.items())) for e in schedule if e.repetition == 1)
    # Not the same combination first in every task block.
    assert len(firsts) > 1


def test_repetitions_must_fill_whole_task_blocks():
    with pytest.raises(ValueError, match="multiple of 8"):
        _schedule(repetitions=3, factors=SEED_002_FACTORS)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"cells": []}, "at least one cell"),
        ({"evaluands": ["a", "a"]}, "listed twice"),
        ({"repetitions": 0}, "positive integer"),
        ({"seed": -1}, "non-negative integer"),
        ({"seed": "7"}, "non-negative integer"),
        ({"block_by": "family"}, "block_by"),
        ({"factors": (FactorSpec("x", ("only",)),)}, "two distinct levels"),
        ({"factors": (FactorSpec("x", ("a", "b"), "nuisance"),)}, "role"),
        ({"strata": {CELLS[0]: "A"}}, "no stratum"),
    ],
)
def test_bad_inputs_are_refused_with_the_reason(overrides, message):
    with pytest.raises(ValueError, match=message):
        _schedule(**overrides)


def test_every_order_of_three_cells_is_equally_likely_over_seeds():
    # Fisher–Yates gives each of the n! orders probability 1/n!: over 6000 consecutive seeds the
    # six orders of three cells must pass a chi-square goodness-of-fit test against uniform.
    # (Deterministic: the seeds are fixed, so this either always passes or always fails.)
    cells = [("a", "L0"), ("b", "L0"), ("c", "L0")]
    counts = Counter(
        tuple(
            e.cell
            for e in administration_schedule(cells=cells, evaluands=["m"], repetitions=1, seed=seed)
        )
        for seed in range(6000)
    )
    assert len(counts) == 6
    assert chisquare(list(counts.values())).pvalue > 0.001


def test_stratified_rounds_keep_every_stratum_near_its_share_in_every_prefix():
    # The interleaving bound from the module docstring: |count − m·n_s/n| ≤ 1 + S·n_s/n.
    cells = [(f"a-{i:02d}", f"L{level}") for i in range(1, 9) for level in range(6)]
    cells += [(f"b-{i:02d}", f"L{level}") for i in range(1, 7) for level in range(4)]
    strata = {cell: cell[1] for cell in cells}
    sizes = Counter(strata.values())
    n, s = len(cells), len(sizes)
    for seed in range(50):
        schedule = administration_schedule(
            cells=cells, evaluands=["m"], repetitions=1, seed=seed, strata=strata
        )
        seen = Counter()
        for m, entry in enumerate(schedule, start=1):
            seen[strata[entry.cell]] += 1
            for stratum, size in sizes.items():
                assert abs(seen[stratum] - m * size / n) <= 1 + s * size / n


def test_unstratified_rounds_can_bunch_a_level_which_is_why_strata_exist():
    cells = [(f"a-{i:02d}", f"L{level}") for i in range(1, 9) for level in range(6)]
    strata = {cell: cell[1] for cell in cells}

    def worst(schedule):
        seen, worst_gap = Counter(), 0.0
        for m, entry in enumerate(schedule, start=1):
            seen[strata[entry.cell]] += 1
            worst_gap = max(worst_gap, max(abs(seen[k] - m / 6) for k in set(strata.values())))
        return worst_gap

    plain = max(
        worst(administration_schedule(cells=cells, evaluands=["m"], repetitions=1, seed=s))
        for s in range(50)
    )
    assert plain > 2
