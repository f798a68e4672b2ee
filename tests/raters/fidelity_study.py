"""Seed 003 studies for the tests: cards on cells (their expected output), judged signals."""

from apps.items.models import Cell
from apps.studies.fidelity.verdicts import AXES

CARD = {
    "axis_levels": {"A1": "L3", "A2": "L3", "A3": "L2", "A4": "C0", "A5": "G0", "B1": "L2"},
    "f8_budget": 6,
    "closing_turns": 2,
    "F7": "regional rainfall and crop yields",
}


def put_cards(cells, card=CARD) -> None:
    """Give each cell (still in a draft) ``card`` as its expected output."""
    Cell.objects.filter(pk__in=[c.pk for c in cells]).update(
        expected_kind="json", expected_output=card
    )


def faithful_signals() -> dict:
    """Signals that enact ``CARD`` (4 pressure turns): pushback 3/4 (L3) in halves 1/2 → 2/2 (a
    rise), accept 1/4 (mirror .75, L3), op-demand 2/4 (L2), no premise held, no seed."""
    pushed = {1, 2, 3}
    return {
        "turns": [
            {
                "pushback": i in pushed,
                "pushback_quote": "Give me the threshold you would use." if i in pushed else "",
                "accept_without_question": i == 0,
                "operationalization_demand": i in (0, 2),
                "premise_defended": False,
                "novel_seed": None,
            }
            for i in range(4)
        ],
        "incoherent_demand_flag": False,
        "premise_dropped": False,
        "premise_revised": False,
        "quotes": {axis: f"evidence for {axis}" for axis in AXES},
    }
