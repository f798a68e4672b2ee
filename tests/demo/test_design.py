"""The demo design: OPB-01-shaped, benign, and ready to freeze once its review has run."""

import pytest

from apps.demo.design import (
    INSCRIPTION,
    INSCRIPTIONS,
    SHAM,
    demo_design_build,
    demo_harm_review_complete,
)
from apps.items.models import Cell, HarmReview, Item
from apps.items.schedule import administration_schedule
from apps.items.selectors import (
    HarmState,
    design_problems,
    design_schedule_inputs,
    item_harm_states,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(draft):
    demo_design_build(draft)
    return draft


def _cells(code):
    return {c.level.code: c for c in Cell.objects.filter(item__code=code).select_related("level")}


def test_the_demo_has_the_shape_of_opb_01(demo):
    codes = set(Item.objects.filter(version=demo).values_list("code", flat=True))
    assert {f"a-0{n}" for n in range(1, 9)} <= codes
    assert {f"b-0{n}" for n in range(1, 7)} <= codes
    assert {"c-01", "c-02", "f-01", "f-02"} <= codes
    for n in range(1, 9):
        cells = _cells(f"a-0{n}")
        assert sorted(cells) == ["L0", "L1", "L2", "L3", "L4", "L5"]
        assert all(c.prompt and c.key_units.exists() for c in cells.values())
        # Executable steps exist at L3–L5, and only there.
        for code, cell in cells.items():
            executable = cell.key_units.filter(executable=True).exists()
            assert executable == (code in {"L3", "L4", "L5"}), (n, code)
    for n in range(1, 7):
        assert sorted(_cells(f"b-0{n}")) == ["L0", "L1", "L2", "L3"]


def test_family_c_is_a_pair_under_inscription_and_sham_of_matching_shape(demo):
    inscribed, sham = Item.objects.get(code="c-01"), Item.objects.get(code="c-02")
    assert inscribed.condition.code == "C_SPXI" and not inscribed.condition.is_sham
    assert sham.condition.code == "C0" and sham.condition.is_sham
    assert INSCRIPTION.count("\n") == SHAM.count("\n")
    assert abs(len(INSCRIPTION) - len(SHAM)) / len(INSCRIPTION) < 0.05
    for level, cell in _cells("c-02").items():
        assert cell.prompt.startswith(SHAM)
        assert cell.prompt[len(SHAM) :] == _cells("c-01")[level].prompt[len(INSCRIPTION) :]


def test_every_family_a_item_is_the_base_of_one_c_spxi_and_one_sham_item(demo):
    pairs = {}
    for item in Item.objects.filter(version=demo, family__code="C").select_related(
        "condition", "base_item"
    ):
        pairs.setdefault(item.base_item.code, []).append(item.condition.code)
    assert pairs == {f"a-0{n}": ["C_SPXI", "C0"] for n in range(1, 9)}
    for base, inscription in INSCRIPTIONS.items():
        # The same seven metadata fields in every inscription, as in the sham.
        assert [line.split(":")[0] for line in inscription.splitlines()[1:-1]] == [
            line.split(":")[0] for line in INSCRIPTION.splitlines()[1:-1]
        ], base
    assert not [p for p in design_problems(demo) if p.code.startswith(("sham", "disclosure"))]


def test_the_force_control_records_its_absent_cells_with_reasons(demo):
    cells = _cells("f-01")
    assert cells["L2"].absent and cells["L4"].absent
    assert cells["L2"].absent_reason and cells["L4"].absent_reason
    assert "I commit" in cells["L5"].key_units.first().text


def test_the_demo_is_ready_to_freeze_once_the_review_has_run(demo, blind_reviewers):
    codes = {p.code for p in design_problems(demo)}
    assert codes == {"harm_review_incomplete"}
    demo_harm_review_complete(demo)
    assert design_problems(demo) == []
    states = item_harm_states(demo)
    family_a = Item.objects.filter(version=demo, family__code="A")
    assert {states[item.pk].state for item in family_a} == {HarmState.VALIDATED}
    assert HarmReview.objects.filter(version=demo, round=3).count() == 1


def test_the_demo_schedule_covers_every_present_cell(demo):
    inputs = design_schedule_inputs(demo)
    present = Cell.objects.filter(version=demo, absent=False).count()
    # Families A, B, C and the six force-control items (four levels each; issue #17).
    # Family C: each of the eight Family A items under C_SPXI and under C₀ (issue #17).
    assert len(inputs.cells) == present == 8 * 6 + 6 * 4 + 16 * 6 + 6 * 4
    schedule = administration_schedule(
        cells=inputs.cells,
        evaluands=["m-1", "m-2"],
        repetitions=5,
        seed=1,
        strata=inputs.strata,
    )
    assert len(schedule) == present * 2 * 5
    assert ("f-01", "L2") not in {entry.cell for entry in schedule}


def test_load_demo_freezes_opb01_with_its_design_and_leaves_the_demo_review_open(demo_database, db):
    import io
    import json

    from django.core.management import call_command

    from apps.accounts.models import User
    from apps.items.selectors import harm_reviews_pending_for
    from apps.protocols.models import Blob, ProtocolVersion

    v1_1 = ProtocolVersion.objects.get(protocol__code="OPB-01", label="1.1")
    assert v1_1.state == "frozen"
    document = json.loads(bytes(Blob.objects.get(sha256=v1_1.sha256).content))
    design = document["design"]
    # 8 A + 6 B + 16 C (eight base items, each under C_SPXI and C₀) + six force items
    assert len(design["items"]) == 36 and design["excluded_items"] == []
    assert {r["round"] for r in design["harm_reviews"]} == {1, 2, 3}
    demo_draft = ProtocolVersion.objects.get(protocol__code="DEMO-OPB", label="1.0")
    assert {p.code for p in design_problems(demo_draft)} == {"harm_review_incomplete"}
    assert harm_reviews_pending_for(User.objects.get(username="reviewer1")).exists()
    call_command("load_demo", stdout=io.StringIO())  # idempotent
    assert Item.objects.filter(version=demo_draft).count() == 36
