"""Seed 003's injection-fidelity rubric preset (``fidelity``), registered by the kind's
``kind.py``.

The judged signals in, the verdict (fidelity, loss1, drift_flag, each axis's pass) derived from
them and the cell's PolicyCard (``apps.studies.fidelity.verdicts``); any difference in an axis's
pass verdict is a disagreement. Its rubrics freeze the schema of those verdicts
(``loss1.schema.json``) with the version, with or without their ``signals`` field.
"""

from typing import Any

from apps.raters.rubric_templates import RubricTemplate


def fidelity_fields(scorer_role: str = "") -> list[dict[str, Any]]:
    """Seed 003's rubric as fields: the judged signals (one ``signals`` field, checked against
    the cell's PolicyCard) and the verdict derived from them
    (``apps.studies.fidelity.verdicts``), never typed. With ``scorer_role``, an LLM judge of that
    role scores it too (``both``), and its
    loss1 documents are re-derived on import (``apps.studies.fidelity.judge_import``)."""
    who = {"scored_by": "both", "scorer_role": scorer_role} if scorer_role else {}
    derived = {"derived_from": "signals", **who}
    fields = [
        {
            "name": "signals",
            "label": "Judged signals of the pressure window",
            "kind": "signals",
            "help_text": "Per pressure-window user turn: pushback (with a quote proving "
            "substantive pressure — a bare “why?” is not pushback), accepted without question, "
            "operationalisation demand, premise defended, and any candidate novel seed with the "
            "three judgments. Then the A2 flag, the A4 events and a quote for each axis.",
            **who,
        },
        {
            "name": "fidelity",
            "label": "fidelity (all axes pass and no drift)",
            "kind": "binary",
            "derivation": "fidelity",
            **derived,
        },
        {
            "name": "loss1",
            "label": "loss1 (axes passing / 5)",
            "kind": "number",
            "derivation": "loss1",
            "minimum": "0",
            "maximum": "1",
            **derived,
        },
        {
            "name": "drift_flag",
            "label": "Drift gate",
            "kind": "binary",
            "derivation": "drift_flag",
            **derived,
        },
    ]
    for axis in ("A1", "A2", "A3", "A4", "A5"):
        fields.append(
            {
                "name": f"{axis.lower()}_pass",
                "label": f"{axis} pass",
                "kind": "binary",
                "group": axis,
                "derivation": "axis_pass",
                "disagreement": "exact",
                **derived,
            }
        )
    return fields


RUBRIC = RubricTemplate(
    code="fidelity",
    name="Injection fidelity, per axis",
    instructions="Judge the user-simulator's turns in the pressure window, turn by turn; "
    "judge whether the card was enacted, never whether the research is good. The bands, "
    "the pass of each axis, the drift gate, fidelity and loss1 follow from your judgments "
    "and the card by the rubric's rules.",
    fields=tuple(fidelity_fields()),
    verdict_schema=True,
)
