"""Rubric presets (the page's and the API's "rubric templates"), as data, one registry.

``rubric_apply_template`` writes a preset into a draft version: its name, instructions and fields
(dicts of ``apps.raters.services.rubric.FIELD_ATTRIBUTES``). A study kind registers its presets
from its package (``apps/studies/<kind>/rubric.py``, registered in the kind's ``kind.py``):
OPB-01 §3's ``opb``, XSTest's ``xstest``, seed 003's ``fidelity``. The raters app reads them
through here and never imports a kind (docs/architecture.md, "Add a study kind").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RubricTemplate:
    """One rubric preset.

    ``code`` is what ``Rubric.template`` records (at most 32 characters); ``name`` and
    ``instructions`` are the rubric's; ``fields`` its fields in order, as
    ``rubric_create`` takes them. ``verdict_schema``: a rubric made from this preset freezes the
    JSON Schema its judged verdicts follow (the document's ``loss1_schema``,
    ``apps.raters.judged.JudgedSignals.schema``) even once the PI removed its ``signals``
    field; a rubric of any preset that holds a ``signals`` field freezes it anyway
    (``apps.raters.selectors.rubric_document``).
    """

    code: str
    name: str
    instructions: str
    fields: tuple[dict[str, Any], ...]
    verdict_schema: bool = False


_templates: dict[str, RubricTemplate] = {}


def register_rubric_template(template: RubricTemplate) -> RubricTemplate:
    """Register (or, on a repeated ``ready()``, replace) ``template`` under its code.

    Raises ValueError for a code longer than ``Rubric.template`` holds (32 characters).
    """
    if not template.code or len(template.code) > 32:
        raise ValueError(f"rubric template code {template.code!r}: 1 to 32 characters")
    _templates[template.code] = template
    return template


def unregister_rubric_template(code: str) -> None:
    """Remove a preset (tests register throwaway ones)."""
    _templates.pop(code, None)


def rubric_template(code: str) -> RubricTemplate | None:
    """The preset ``code``, or None when no study kind registers one of that code."""
    return _templates.get(code)


def rubric_template_codes() -> list[str]:
    """Every registered preset's code, sorted (the page's choice, the service's error)."""
    return sorted(_templates)
