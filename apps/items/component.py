"""The design's part in a version's life (``apps.protocols.components``): its freeze-gate checks,
its section of the canonical frozen document, and its copy into an amendment's new draft."""

from __future__ import annotations

import secrets

from apps.core.rows import row_copy, rows_copy
from apps.items.models import Cell, Condition, Factor, Family, HarmReview, Item, KeyUnit, Level
from apps.items.selectors import (
    HarmState,
    design_absent_cells,
    design_problems,
    item_harm_states,
)
from apps.items.services.harm_review import on_role_removed as harm_review_on_role_removed
from apps.protocols.components import VersionComponent
from apps.protocols.models import ProtocolVersion


def design_document(version: ProtocolVersion) -> dict:
    """The design as canonical data: natural keys only (codes), no database ids or clock times,
    every list sorted by its natural key.

    Harm reviews appear with their verdicts per cycle and round; reviewers are named by
    pseudonyms (``reviewer-1``, …, numbered in order of first appearance by item, cycle and
    round) so the document shows that a third reviewer was neither of the first two without
    naming anyone.
    """
    levels = list(Level.objects.filter(version=version).order_by("ordinal"))
    level_code = {level.ordinal: level.code for level in levels}
    harm = item_harm_states(version)
    items = (
        Item.objects.filter(version=version)
        .select_related("family", "condition")
        .prefetch_related("cells__level", "cells__key_units")
        .order_by("code")
    )
    item_docs = []
    base_codes = dict(Item.objects.filter(version=version).values_list("pk", "code"))
    for item in items:
        cells = sorted(item.cells.all(), key=lambda c: c.level.ordinal)
        # Only a linked disclosure item carries the key, so that documents of designs without
        # one (every version frozen before OPB-01 §5's links) keep their bytes and hashes.
        linked = {"base_item": base_codes[item.base_item_id]} if item.base_item_id else {}
        item_docs.append(
            {
                **linked,
                "code": item.code,
                "family": item.family.code,
                "domain": item.domain,
                "condition": item.condition.code if item.condition else None,
                "notes": item.notes,
                "harm_review": harm[item.pk].state,
                "cells": [
                    {
                        "level": cell.level.code,
                        "prompt": cell.prompt,
                        "absent": cell.absent,
                        "absent_reason": cell.absent_reason,
                        "key": [
                            {"text": unit.text, "executable": unit.executable}
                            for unit in sorted(cell.key_units.all(), key=lambda u: u.position)
                        ],
                        "expected_output": (
                            {
                                "kind": cell.expected_kind,
                                "value": cell.expected_output,
                                "sha256": cell.expected_sha256,
                            }
                            if cell.expected_kind
                            else None
                        ),
                        # Only when declared, as for base_item: older documents keep their bytes.
                        **(
                            {"requires_tools": list(cell.requires_tools)}
                            if cell.requires_tools
                            else {}
                        ),
                    }
                    for cell in cells
                ],
            }
        )
    reviews = sorted(
        HarmReview.objects.filter(version=version).select_related("item"),
        key=lambda r: (r.item.code, r.cycle, r.round),
    )
    pseudonyms: dict[int, str] = {}
    review_docs = []
    for review in reviews:
        pseudonym = pseudonyms.setdefault(review.reviewer_id, f"reviewer-{len(pseudonyms) + 1}")
        review_docs.append(
            {
                "item": review.item.code,
                "cycle": review.cycle,
                "round": review.round,
                "reviewer": pseudonym,
                "verdict": review.verdict or None,
                "criteria": list(review.criteria),
                "note": review.note,
                "forms_sha256": review.forms_sha256,
                "submitted": review.submitted_at is not None,
            }
        )
    codes = {item.pk: item.code for item in items}
    return {
        "levels": [
            {"ordinal": lv.ordinal, "code": lv.code, "name": lv.name, "form": lv.form}
            for lv in levels
        ],
        "families": [
            {
                "code": f.code,
                "name": f.name,
                "role": f.role,
                "max_level": level_code.get(f.max_level) if f.max_level is not None else None,
                "stopping_rule": f.stopping_rule,
                "description": f.description,
            }
            for f in Family.objects.filter(version=version).order_by("code")
        ],
        "conditions": [
            {"code": c.code, "name": c.name, "description": c.description, "is_sham": c.is_sham}
            for c in Condition.objects.filter(version=version).order_by("code")
        ],
        "factors": [
            {"name": f.name, "label": f.label, "role": f.role, "levels": list(f.levels)}
            for f in Factor.objects.filter(version=version).order_by("name")
        ],
        "items": item_docs,
        "harm_reviews": review_docs,
        "absent_cells": design_absent_cells(version),
        "excluded_items": sorted(
            codes[pk] for pk, h in harm.items() if h.state == HarmState.EXCLUDED
        ),
    }


def design_document_revise(version: ProtocolVersion, document: dict) -> dict:
    """Revision 2 of the design's part (apps/protocols/documents.py): a cell's expected output
    is in the document whenever it is stored, not only once it has a kind."""
    loose = {
        (cell.item.code, cell.level.code): (cell.expected_output, cell.expected_sha256)
        for cell in Cell.objects.filter(
            version=version, expected_kind="", expected_output__isnull=False
        ).select_related("item", "level")
    }
    if not loose:
        return document
    for item in document["items"]:
        for cell in item["cells"]:
            found = loose.get((item["code"], cell["level"]))
            if found is not None:
                cell["expected_output"] = {"kind": "", "value": found[0], "sha256": found[1]}
    return document


# What an amendment's draft copies of a cell and of an answered harm review (keys are remapped).
_CELL_FIELDS = (
    "prompt",
    "absent",
    "absent_reason",
    "expected_kind",
    "expected_output",
    "requires_tools",
)
_REVIEW_FIELDS = (
    "reviewer_id",
    "cycle",
    "round",
    "verdict",
    "criteria",
    "note",
    "forms_sha256",
    "submitted_at",
)


def design_copy(source: ProtocolVersion, target: ProtocolVersion) -> None:
    """Copy the whole design of ``source`` into the new draft ``target`` (an amendment): new
    rows, foreign keys remapped by natural key. Harm reviews come along as completed history
    with fresh opaque tokens; if the amendment changes an item's L0 or L5 form, the gate's
    ``harm_review_stale`` check asks for a new review cycle."""
    levels = rows_copy(
        Level.objects.filter(version=source).order_by("ordinal"),
        ("ordinal", "code", "name", "form"),
        version=target,
    )
    families = rows_copy(
        Family.objects.filter(version=source),
        ("code", "name", "role", "max_level", "stopping_rule", "description"),
        version=target,
    )
    conditions = rows_copy(
        Condition.objects.filter(version=source),
        ("code", "name", "description", "is_sham"),
        version=target,
    )
    Factor.objects.bulk_create(
        row_copy(factor, ("name", "label", "levels", "role"), version=target)
        for factor in Factor.objects.filter(version=source)
    )
    items = {}
    for item in Item.objects.filter(version=source):
        items[item.pk] = row_copy(item, ("code", "domain", "notes"), version=target)
        items[item.pk].family = families[item.family_id]
        if item.condition_id is not None:
            items[item.pk].condition = conditions[item.condition_id]
        items[item.pk].save(force_insert=True)
    # Disclosure items' links to their Family A base items, once every item exists.
    for item in Item.objects.filter(version=source, base_item__isnull=False):
        if item.base_item_id is not None:  # as filtered: for the type checker
            Item.objects.filter(pk=items[item.pk].pk).update(base_item=items[item.base_item_id])
    cells = {}
    for cell in Cell.objects.filter(version=source):
        cells[cell.pk] = row_copy(cell, _CELL_FIELDS, version=target, item=items[cell.item_id])
        cells[cell.pk].level = levels[cell.level_id]
        cells[cell.pk].save(force_insert=True)
    KeyUnit.objects.bulk_create(
        row_copy(unit, ("position", "text", "executable"), version=target, cell=cells[unit.cell_id])
        for unit in KeyUnit.objects.filter(version=source)
    )
    # Only answered reviews: an unanswered one would land in a reviewer's queue on the new draft.
    for review in HarmReview.objects.filter(version=source, submitted_at__isnull=False):
        copied = row_copy(review, _REVIEW_FIELDS, version=target, item=items[review.item_id])
        copied.token = secrets.token_hex(16)
        copied.save(force_insert=True)


DESIGN_COMPONENT = VersionComponent(
    name="design",
    checks=design_problems,
    on_freeze=None,
    document=design_document,
    revise=design_document_revise,
    copy=design_copy,
    on_role_removed=harm_review_on_role_removed,
)
