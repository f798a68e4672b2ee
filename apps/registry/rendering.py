"""The frozen document, read for a public page: what the version page shows, drawn from the
blob's own JSON (so the page shows exactly what was hashed), never from the live rows.

What a reader outside the study must not see is left out here and named in ``WITHHELD``.
"""

from __future__ import annotations

import json
from typing import Any

from apps.core.markdown import render_markdown
from apps.protocols.components import RESERVED_NAMES
from apps.protocols.plans import SECTION_TITLES

# What the public pages do not show, and why (seed 001 §11: withheld artifacts are disclosed).
WITHHELD = (
    (
        "Evaluands' full identity tuples on the page",
        "the roster shows each evaluand by its code and identity hash; the tuples themselves "
        "are part of the frozen document, which is served whole because its hash must be "
        "checkable.",
    ),
    (
        "Reviewer names and every score",
        "blind reviewers are never named (harm-constancy reviews carry pseudonyms) and scores "
        "stay private until the PI publishes an analysis run.",
    ),
    (
        "Analysis results",
        "sealed until the PI unseals them, and then private until the PI publishes a run.",
    ),
    (
        "Versions that are not published",
        "drafts, versions still under embargo and unpublished versions are not shown anywhere.",
    ),
)


def _design(design: dict[str, Any]) -> dict[str, Any]:
    items = design.get("items") or []
    cells = [cell for item in items for cell in item.get("cells", [])]
    return {
        "levels": design.get("levels") or [],
        "families": design.get("families") or [],
        "conditions": design.get("conditions") or [],
        "factors": design.get("factors") or [],
        "items": len(items),
        "cells": len(cells),
        "absent_cells": sum(1 for cell in cells if cell.get("absent")),
        "key_units": sum(len(cell.get("key") or []) for cell in cells),
        "excluded_items": design.get("excluded_items") or [],
    }


def _roster(responses: dict[str, Any]) -> dict[str, Any]:
    return {
        "evaluands": [
            {
                "code": entry.get("code"),
                "label": entry.get("label"),
                "identity_sha256": entry.get("identity_sha256"),
            }
            for entry in responses.get("roster") or []
        ],
        "administrations": len(responses.get("schedule") or []),
        "schedule_sha256": responses.get("schedule_sha256"),
    }


def document_for_reading(content: bytes) -> dict[str, Any]:
    """The frozen document's JSON ``content`` as a page shows it: ``sections`` (title, html,
    text), ``parameters`` (name, label, value, unit, required, in plan order), ``decision_table``,
    ``design`` (summary), ``rubric`` (name, instructions html, fields), ``roster`` (codes and
    identity hashes), ``amendment_rationale`` and ``other`` (the names of further components,
    which the document holds in full)."""
    document: dict[str, Any] = json.loads(content)
    sections = document.get("sections") or {}
    parameters = sorted(
        (
            {"name": name, **{k: p.get(k) for k in ("label", "value", "unit", "required")}}
            for name, p in (document.get("parameters") or {}).items()
        ),
        key=lambda p: (
            (document["parameters"][p["name"]].get("position") or 0),
            p["name"],
        ),
    )
    rubric = document.get("rubric")
    # The document's own keys and the built-in components' parts: anything else is shown as
    # another study kind's part.
    known = RESERVED_NAMES | {"design", "rubric", "responses"}
    return {
        "sections": [
            {
                "name": name,
                "title": title,
                "text": sections.get(name) or "",
                "html": render_markdown(sections.get(name) or ""),
            }
            for name, title in SECTION_TITLES.items()
        ],
        "parameters": parameters,
        "decision_table": document.get("decision_table") or [],
        "pipeline": document.get("pipeline"),
        "design": _design(document["design"]) if isinstance(document.get("design"), dict) else None,
        "rubric": (
            {
                "name": rubric.get("name"),
                "instructions_html": render_markdown(rubric.get("instructions") or ""),
                "fields": rubric.get("fields") or [],
            }
            if isinstance(rubric, dict)
            else None
        ),
        "roster": _roster(document["responses"])
        if isinstance(document.get("responses"), dict)
        else None,
        "amendment_rationale": document.get("amendment_rationale") or "",
        "other": sorted(key for key, value in document.items() if key not in known and value),
    }
