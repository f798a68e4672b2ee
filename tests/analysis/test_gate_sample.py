"""Issue #32 §2: the computability gate samples a large design by its own structure — every
family, whole task blocks, whole items — never below the plan's cluster floors."""

from types import SimpleNamespace

from apps.analysis.gate_sample import (
    Structure,
    block_size,
    cluster_floor,
    named_items,
    structural_sample,
)
from apps.protocols.models import ParameterKind
from apps.protocols.plans import ParameterSpec


def _structure(
    families: dict[str, int],
    *,
    levels=1,
    evaluands=2,
    repetitions=8,
    block=8,
    floor=20,
    linked=None,
    named=(),
):
    cells = [
        (f"{family}-{n:03d}", level)
        for family, count in families.items()
        for n in range(count)
        for level in range(levels)
    ]
    return Structure(
        cells=cells,
        family_of={item: item.split("-")[0] for item, _ in cells},
        linked=linked or {},
        evaluands=[f"m{i}" for i in range(evaluands)],
        repetitions=repetitions,
        block=block,
        floor=floor,
        named=set(named),
    )


def test_a_design_within_the_budget_is_checked_whole():
    structure = _structure({"A": 10, "B": 10})
    sample = structural_sample(structure, budget=10_000)
    assert sample.administrations == structure.administrations and sample.note == ""


def test_the_sample_keeps_whole_task_blocks_and_every_family():
    structure = _structure({"A": 64, "B": 64}, evaluands=2, repetitions=64, floor=64)
    sample = structural_sample(structure, budget=2_000)
    assert sample.repetitions % 8 == 0 and sample.repetitions >= 8
    assert {item.split("-")[0] for item, _ in sample.cells} == {"A", "B"}
    # items × rounds per family never below the floor of 64
    for family in "AB":
        items = {i for i, _ in sample.cells if i.startswith(family)}
        assert len(items) * (sample.repetitions // 8) >= 64


def test_a_family_smaller_than_the_floor_keeps_enough_rounds():
    # 8 tasks per family × 8 rounds = 64 blocks: one round would leave 8 blocks, under 20
    structure = _structure({"A": 8, "B": 8}, evaluands=2, repetitions=64, floor=20)
    sample = structural_sample(structure, budget=100)
    assert sample.repetitions == 3 * 8  # ceil(20 / 8) whole rounds
    for family in "AB":
        items = {i for i, _ in sample.cells if i.startswith(family)}
        assert len(items) * 3 >= 20
    assert "repetitions 1–24 of 64 (whole task blocks of 8 repetitions)" in sample.note


def test_items_are_kept_whole_with_their_base_item_and_the_items_the_plan_names():
    structure = _structure(
        {"A": 100, "C": 100},
        levels=3,
        evaluands=3,
        repetitions=1,
        block=1,
        floor=10,
        linked={"C-099": "A-098"},
        named={"A-099", "C-099"},
    )
    sample = structural_sample(structure, budget=100)
    kept = {i for i, _ in sample.cells}
    assert {"C-099", "A-098"} <= kept
    assert "A-099" in kept
    levels = {}
    for item, level in sample.cells:
        levels.setdefault(item, set()).add(level)
    assert all(len(v) == 3 for v in levels.values())  # every cell of a kept item
    assert sum(i.startswith("A") for i in kept) >= 10 and sum(i.startswith("C") for i in kept) >= 10
    assert "1 of 3 evaluands" in sample.note


def test_block_size_is_the_number_of_design_combinations():
    factor = lambda n, role: SimpleNamespace(levels=tuple(range(n)), role=role)  # noqa: E731
    assert block_size([factor(2, "design"), factor(2, "design"), factor(3, "counterbalanced")]) == 4
    assert block_size([factor(2, "counterbalanced")]) == 1


def test_the_floor_reads_the_plans_cluster_parameters():
    declaration = SimpleNamespace(
        parameters=(
            ParameterSpec(
                "min_task_blocks", "m", ParameterKind.INTEGER, unit="task blocks", default="64"
            ),
            ParameterSpec("repetitions", "r", ParameterKind.INTEGER, default="500"),
        )
    )
    assert cluster_floor(declaration, {}) == 64
    assert cluster_floor(declaration, {"min_task_blocks": "100"}) == 100
    assert cluster_floor(None, {}) == 20


def test_named_items_are_read_from_json_values():
    parameters = {"controls": '[{"items": ["A-1", "X"]}]', "note": "A-2", "n": "3"}
    assert named_items(parameters, {"A-1", "A-2", "A-3"}) == {"A-1", "A-2"}
