"""OPB-01 §5's disclosure arm at authoring time: base items linked, shams matching inscriptions.

§5: "C₀ — sham inscription. Same length, same structure, same headings, same machine-facing
metadata form, filled with neutral content". The freeze gate (``design_problems``) refuses:

- ``disclosure_base_missing``: a disclosure item (C_SPXI or C₀) that names no Family A base
  item, so the three-way contrast could not pair it;
- ``sham_unmatched``: a C₀ item whose base item has no C_SPXI item (nothing to match);
- ``sham_mismatch``: at a level both are written at, the sham's prompt differs from its
  inscription's in word count by more than the plan's ``sham_word_tolerance`` (a share of the
  inscription's words), in heading structure (the sequence of Markdown heading depths) or in
  metadata form (front matter, JSON-LD or a JSON block, and the number of its fields).

Each message names the items and the level. Pure text functions below have no ORM.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation

from apps.items.models import Cell, FamilyRole, Item
from apps.protocols.components import Problem
from apps.protocols.models import AnalysisParameter, ProtocolVersion

DEFAULT_WORD_TOLERANCE = 0.1
_HEADING = re.compile(r"^(#{1,6})\s+\S", re.MULTILINE)
_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.DOTALL)
_JSON_LD = re.compile(
    r"<script[^>]*application/ld\+json[^>]*>(.*?)</script>", re.DOTALL | re.IGNORECASE
)
_JSON_BLOCK = re.compile(r"```(?:json|jsonld|json-ld)\n(.*?)```", re.DOTALL | re.IGNORECASE)


def word_count(text: str) -> int:
    """Whitespace-separated words, as the demo's and the importers' word counts read them."""
    return len(text.split())


def heading_structure(text: str) -> tuple[int, ...]:
    """The depths of the Markdown headings in order: ``## A`` then ``### B`` → (2, 3)."""
    return tuple(len(m.group(1)) for m in _HEADING.finditer(text))


def metadata_form(text: str) -> tuple[str, int] | None:
    """The machine-facing metadata block's form and its number of top-level fields.

    ``("front matter", 7)`` for a YAML-style ``---`` block of seven ``key:`` lines,
    ``("json-ld", n)`` for a ``<script type="application/ld+json">`` block, ``("json", n)`` for
    a fenced JSON block; None when the prompt has none. A block that does not parse counts -1
    fields.
    """
    match = _FRONT_MATTER.match(text)
    if match:
        keys = [line for line in match.group(1).splitlines() if re.match(r"^[^\s#][^:]*:", line)]
        return ("front matter", len(keys))
    for form, pattern in (("json-ld", _JSON_LD), ("json", _JSON_BLOCK)):
        match = pattern.search(text)
        if match:
            try:
                data = json.loads(match.group(1))
            except ValueError:
                return (form, -1)
            return (form, len(data) if isinstance(data, dict) else -1)
    return None


def _describe(form: tuple[str, int] | None) -> str:
    return "none" if form is None else f"{form[0]} with {form[1]} fields"


def sham_mismatches(inscription: str, sham: str, *, tolerance: float) -> list[str]:
    """How a sham's prompt fails to match its inscription's (§5); empty when it matches."""
    out = []
    words, sham_words = word_count(inscription), word_count(sham)
    if abs(sham_words - words) > tolerance * words:
        out.append(
            f"word count {sham_words} against {words} (tolerance {tolerance:g} of the "
            "inscription's)"
        )
    if heading_structure(sham) != heading_structure(inscription):
        out.append(
            f"heading structure {list(heading_structure(sham))} against "
            f"{list(heading_structure(inscription))}"
        )
    if metadata_form(sham) != metadata_form(inscription):
        out.append(
            f"metadata form {_describe(metadata_form(sham))} against "
            f"{_describe(metadata_form(inscription))}"
        )
    return out


def _tolerance(version: ProtocolVersion) -> float:
    value = (
        AnalysisParameter.objects.filter(version=version, name="sham_word_tolerance")
        .values_list("value", flat=True)
        .first()
    )
    try:
        return float(Decimal((value or "").strip()))
    except (InvalidOperation, ValueError):
        return DEFAULT_WORD_TOLERANCE


def disclosure_problems(version: ProtocolVersion, design_url: str) -> list[Problem]:
    """The gate's disclosure-arm problems (module docstring), each naming its items."""
    items = list(
        Item.objects.filter(version=version, family__role=FamilyRole.DISCLOSURE)
        .select_related("condition", "base_item")
        .order_by("code")
    )
    if not items:
        return []
    problems = []
    by_base: dict[str, dict[str, list[Item]]] = {}
    for item in items:
        base_item = item.base_item  # select_related above: no query
        if base_item is None:
            problems.append(
                Problem(
                    "disclosure_base_missing",
                    f"disclosure item {item.code} names no Family A base item: the three-way "
                    "contrast (OPB-01 §5) pairs every C_SPXI and C₀ item with the plain item "
                    "it inscribes",
                    design_url,
                )
            )
            continue
        role = "sham" if item.condition and item.condition.is_sham else "inscription"
        by_base.setdefault(base_item.code, {}).setdefault(role, []).append(item)
    tolerance = _tolerance(version)
    prompts = {
        (cell.item_id, cell.level.code): cell.prompt
        for cell in Cell.objects.filter(item__in=items, absent=False).select_related("level")
    }
    for base, roles in sorted(by_base.items()):
        inscriptions = roles.get("inscription", [])
        for sham in roles.get("sham", []):
            if not inscriptions:
                problems.append(
                    Problem(
                        "sham_unmatched",
                        f"sham item {sham.code} (base item {base}) has no C_SPXI item on the "
                        "same base item to match",
                        design_url,
                    )
                )
                continue
            for inscription in inscriptions:
                problems += _pair_problems(inscription, sham, base, prompts, tolerance, design_url)
    return problems


def _pair_problems(
    inscription: Item,
    sham: Item,
    base: str,
    prompts: dict[tuple[int, str], str],
    tolerance: float,
    design_url: str,
) -> list[Problem]:
    out = []
    levels = sorted(
        level
        for item_id, level in prompts
        if item_id == sham.pk and (inscription.pk, level) in prompts
    )
    for level in levels:
        found = sham_mismatches(
            prompts[(inscription.pk, level)], prompts[(sham.pk, level)], tolerance=tolerance
        )
        if found:
            out.append(
                Problem(
                    "sham_mismatch",
                    f"sham item {sham.code} does not match its inscription {inscription.code} "
                    f"(base item {base}) at {level}: {'; '.join(found)}",
                    design_url,
                )
            )
    return out
