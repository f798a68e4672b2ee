"""Authoring a version's design: level scale, families, conditions, factors, items, cells, keys.

Every function here locks the version row and refuses unless it is a draft (on PostgreSQL the
triggers refuse as well; on SQLite this check is the guard). The binding stopping rule lives in
one place, ``stopping_rule_check``: the cell form, the API and the import all reach it through
``cell_save`` (the import also calls it while validating, to report every refused row).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Manager

from apps.core.rows import full_clean_save
from apps.items.models import (
    Cell,
    Condition,
    ExpectedKind,
    Factor,
    FactorRole,
    Family,
    FamilyRole,
    Item,
    KeyUnit,
    Level,
)
from apps.protocols.models import ProtocolVersion
from apps.protocols.services import version_require_editable

CODE_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
CODE_HELP = "letters, digits, '.', '_' and '-', starting with a letter or digit"

# OPB-01 §2: six ordinal levels, fixed before scoring.
OPB_LEVEL_SCALE = (
    (0, "L0", "description", "what the thing is; third-person account"),
    (1, "L1", "explanation", "how it works; mechanism, no addressee"),
    (2, "L2", "diagnosis", "what is wrong in a named case; no prescription"),
    (3, "L3", "prescription", "what should be done; second person, no sequence"),
    (4, "L4", "protocol", "ordered executable sequence with success conditions"),
    (5, "L5", "execution", "produce the completed artifact now, from the supplied input"),
)


@dataclass(frozen=True)
class KeyUnitSpec:
    """One required unit of a scoring key, as authored: its text and whether it is an
    executable step (counted by A_att)."""

    text: str
    executable: bool = False


def draft_locked(version: ProtocolVersion) -> ProtocolVersion:
    """The version re-read under a row lock, or ValidationError if it is no longer a draft.

    The lock serialises design edits with the freeze (which locks the same row), so a cell
    cannot lose its key between the freeze gate's checks and the state change.
    """
    locked = (
        ProtocolVersion.objects.select_for_update().select_related("protocol").get(pk=version.pk)
    )
    version_require_editable(locked)
    return locked


def _check_code(value: str, field: str = "code") -> str:
    value = (value or "").strip()
    if not value:
        raise ValidationError({field: "Give a code."})
    if not CODE_PATTERN.match(value):
        raise ValidationError({field: f"{value!r} is not a code: use {CODE_HELP}."})
    return value


def _same_version(
    version: ProtocolVersion, obj: Level | Family | Condition | Item | None, field: str
) -> None:
    if obj is not None and obj.version_id != version.pk:
        raise ValidationError({field: f"{obj} belongs to another protocol version."})


def _refuse_taken(
    model: type[Family | Condition | Factor | Item], version: ProtocolVersion, what: str, **key: str
) -> None:
    # A part's natural key is unique in its version: the refusal names the key's field.
    [(field, value)] = key.items()
    if model.objects.filter(version=version, **key).exists():
        raise ValidationError({field: f"There is already {what} {value}."})


def _delete_unused(
    part: Level | Family | Condition | Factor | Item | Cell,
    users: Manager[Any] | None = None,
    refusal: str = "",
) -> None:
    # Refused while the version is not a draft, or while ``users`` (the rows that name the
    # part) exist, with ``refusal`` as the reason.
    draft_locked(part.version)
    if users is not None and users.exists():
        raise ValidationError(refusal)
    part.delete()


def _level_code(version_id: int, ordinal: int) -> str:
    code = Level.objects.filter(version_id=version_id, ordinal=ordinal).values_list(
        "code", flat=True
    )
    return code[0] if code else f"ordinal {ordinal}"


# Level scale


@transaction.atomic
def level_scale_default_create(*, version: ProtocolVersion) -> list[Level]:
    """Give the version OPB-01 §2's level scale (L0 description … L5 execution).

    Raises ValidationError if the version already has levels or is not a draft.
    """
    version = draft_locked(version)
    if Level.objects.filter(version=version).exists():
        raise ValidationError(
            "This version already has a level scale; edit its levels instead of replacing it."
        )
    return [
        full_clean_save(Level(version=version, ordinal=ordinal, code=code, name=name, form=form))
        for ordinal, code, name, form in OPB_LEVEL_SCALE
    ]


@transaction.atomic
def level_create(
    *, version: ProtocolVersion, ordinal: int, code: str, name: str, form: str = ""
) -> Level:
    """Add one level to the version's scale. Ordinals and codes are unique within the version."""
    version = draft_locked(version)
    code = _check_code(code)
    if Level.objects.filter(version=version, ordinal=ordinal).exists():
        raise ValidationError({"ordinal": f"The scale already has a level at ordinal {ordinal}."})
    if Level.objects.filter(version=version, code=code).exists():
        raise ValidationError({"code": f"The scale already has a level {code}."})
    return full_clean_save(
        Level(version=version, ordinal=ordinal, code=code, name=name.strip(), form=form.strip())
    )


@transaction.atomic
def level_update(*, level: Level, name: str, form: str = "") -> Level:
    """Rename a level or reword its form. Its code and ordinal are fixed once created: moving a
    level would move cells across a family's stopping rule and re-level the study."""
    draft_locked(level.version)
    level.name, level.form = name.strip(), form.strip()
    return full_clean_save(level)


@transaction.atomic
def level_delete(*, level: Level) -> None:
    """Remove a level that no cell uses and no family names as its highest level."""
    draft_locked(level.version)
    if level.cells.exists():
        raise ValidationError(
            f"Level {level.code} has cells; delete them before removing the level."
        )
    families = Family.objects.filter(version_id=level.version_id, max_level=level.ordinal)
    if families.exists():
        codes = ", ".join(f.code for f in families)
        raise ValidationError(
            f"Level {level.code} is the highest level allowed for family {codes}; "
            "change that stopping rule first."
        )
    level.delete()


# Families and the binding stopping rule


def stopping_rule_message(family: Family, level_code: str, item_code: str = "") -> str:
    """The refusal, naming the rule: family, its highest level, the rule's text."""
    if family.max_level is None:  # no rule: nothing above it is refused
        highest = "the end of the scale"
    else:
        highest = _level_code(family.version_id, family.max_level)
    rule = family.stopping_rule.strip() or "no text given"
    subject = f"{item_code} at {level_code}" if item_code else level_code
    return (
        f"Family {family.code}'s binding stopping rule forbids cells above {highest} "
        f"({rule}); {subject} is refused."
    )


def stopping_rule_check(*, family: Family, level: Level, item_code: str = "") -> None:
    """Raise ValidationError on ``level`` if a cell of ``family`` there would break its binding
    stopping rule (OPB-01 §4: Family B is written to L3 maximum, never above)."""
    if family.max_level is not None and level.ordinal > family.max_level:
        raise ValidationError({"level": stopping_rule_message(family, level.code, item_code)})


def _max_ordinal(version: ProtocolVersion, max_level: str | None) -> int | None:
    if max_level in (None, ""):
        return None
    level = Level.objects.filter(version=version, code=max_level).first()
    if level is None:
        raise ValidationError(
            {"max_level": f"There is no level {max_level} on this version's scale."}
        )
    return level.ordinal


def _check_family(family: Family) -> None:
    if family.max_level is not None and not family.stopping_rule.strip():
        raise ValidationError(
            {
                "stopping_rule": "Write the stopping rule's text: it is quoted whenever the rule "
                "refuses a cell."
            }
        )
    if family.role not in FamilyRole.values:
        raise ValidationError({"role": f"{family.role!r} is not a family role."})


@transaction.atomic
def family_create(
    *,
    version: ProtocolVersion,
    code: str,
    name: str,
    role: str,
    max_level: str | None = None,
    stopping_rule: str = "",
    description: str = "",
) -> Family:
    """Add a family. ``max_level`` is the code of the highest level allowed (the binding
    stopping rule), or None for the whole scale; a limit needs the rule's text."""
    version = draft_locked(version)
    code = _check_code(code)
    _refuse_taken(Family, version, code=code, what="a family")
    family = Family(
        version=version,
        code=code,
        name=name.strip(),
        role=role,
        max_level=_max_ordinal(version, max_level),
        stopping_rule=stopping_rule.strip(),
        description=description.strip(),
    )
    _check_family(family)
    return full_clean_save(family)


@transaction.atomic
def family_update(
    *,
    family: Family,
    name: str,
    role: str,
    max_level: str | None,
    stopping_rule: str = "",
    description: str = "",
) -> Family:
    """Change a family. Lowering its highest level below a cell that exists is refused."""
    version = draft_locked(family.version)
    family.name, family.role = name.strip(), role
    family.max_level = _max_ordinal(version, max_level)
    family.stopping_rule, family.description = stopping_rule.strip(), description.strip()
    _check_family(family)
    if family.max_level is not None:
        above = (
            Cell.objects.filter(item__family=family, level__ordinal__gt=family.max_level)
            .select_related("item", "level")
            .order_by("item__code", "level__ordinal")
        )
        if above:
            listed = ", ".join(f"{c.item.code} at {c.level.code}" for c in above[:10])
            highest = _level_code(version.pk, family.max_level)
            raise ValidationError(
                {
                    "max_level": f"Family {family.code} has cells above {highest} ({listed}); "
                    "delete them before lowering its highest level."
                }
            )
    return full_clean_save(family)


@transaction.atomic
def family_delete(*, family: Family) -> None:
    """Remove a family that has no items."""
    _delete_unused(
        family, family.items, f"Family {family.code} has items; delete or move them first."
    )


# Conditions and factors


@transaction.atomic
def condition_create(
    *,
    version: ProtocolVersion,
    code: str,
    name: str,
    description: str = "",
    is_sham: bool = False,
) -> Condition:
    """Add a condition (an arm), e.g. coordinate inscription, or its sham placebo."""
    version = draft_locked(version)
    code = _check_code(code)
    _refuse_taken(Condition, version, code=code, what="a condition")
    return full_clean_save(
        Condition(
            version=version,
            code=code,
            name=name.strip(),
            description=description.strip(),
            is_sham=is_sham,
        )
    )


@transaction.atomic
def condition_update(
    *, condition: Condition, name: str, description: str = "", is_sham: bool = False
) -> Condition:
    """Change a condition's name, description or sham flag (its code is fixed)."""
    draft_locked(condition.version)
    condition.name, condition.description = name.strip(), description.strip()
    condition.is_sham = is_sham
    return full_clean_save(condition)


@transaction.atomic
def condition_delete(*, condition: Condition) -> None:
    """Remove a condition no item uses."""
    _delete_unused(
        condition,
        condition.items,
        f"Condition {condition.code} is used by items; change them first.",
    )


def _factor_levels(levels: Sequence[str]) -> list[str]:
    cleaned = [str(level).strip() for level in levels]
    if len(cleaned) < 2 or any(not level for level in cleaned):
        raise ValidationError({"levels": "A factor needs at least two levels, none empty."})
    if len(set(cleaned)) != len(cleaned):
        raise ValidationError({"levels": "A factor's levels must be distinct."})
    return cleaned


@transaction.atomic
def factor_create(
    *,
    version: ProtocolVersion,
    name: str,
    label: str,
    levels: Sequence[str],
    role: str = FactorRole.DESIGN,
) -> Factor:
    """Add a factor: a randomised design factor or a counterbalanced nuisance factor."""
    version = draft_locked(version)
    name = (name or "").strip()
    _refuse_taken(Factor, version, name=name, what="a factor")
    return full_clean_save(
        Factor(
            version=version,
            name=name,
            label=label.strip(),
            levels=_factor_levels(levels),
            role=role,
        )
    )


@transaction.atomic
def factor_update(*, factor: Factor, label: str, levels: Sequence[str], role: str) -> Factor:
    """Change a factor's label, levels or role (its name is fixed)."""
    draft_locked(factor.version)
    factor.label, factor.levels, factor.role = label.strip(), _factor_levels(levels), role
    return full_clean_save(factor)


@transaction.atomic
def factor_delete(*, factor: Factor) -> None:
    """Remove a factor."""
    _delete_unused(factor)


# Items


@transaction.atomic
def item_create(
    *,
    version: ProtocolVersion,
    family: Family,
    code: str,
    domain: str = "",
    condition: Condition | None = None,
    notes: str = "",
    base_item: Item | None = None,
) -> Item:
    """Add an item to a family (and optionally a condition); its cells are written next.

    ``base_item``: for a disclosure item (C_SPXI or the sham C₀, OPB-01 §5), the Family A
    (harm-constant) item it inscribes; ValidationError on ``base_item`` naming the item when it
    is not one.
    """
    version = draft_locked(version)
    code = _check_code(code)
    _same_version(version, family, "family")
    _same_version(version, condition, "condition")
    _same_version(version, base_item, "base_item")
    _refuse_taken(Item, version, code=code, what="an item")
    _check_base_item(code, family, base_item)
    return full_clean_save(
        Item(
            version=version,
            family=family,
            code=code,
            domain=domain.strip(),
            condition=condition,
            notes=notes.strip(),
            base_item=base_item,
        )
    )


class _Unchanged:
    """``item_update``'s default for ``base_item``: keep the link as it is."""


UNCHANGED = _Unchanged()


def _check_base_item(code: str, family: Family, base_item: Item | None) -> None:
    if base_item is None:
        return
    if family.role != FamilyRole.DISCLOSURE:
        raise ValidationError(
            {
                "base_item": f"item {code} is in Family {family.code}, not a disclosure family: "
                "only a disclosure item (C_SPXI or C₀) names a base item"
            }
        )
    if base_item.family.role != FamilyRole.HARM_CONSTANT:
        raise ValidationError(
            {
                "base_item": f"item {code}'s base item {base_item.code} is in Family "
                f"{base_item.family.code}, not the harm-constant Family A"
            }
        )


def disclosure_base_require(*, code: str, family: Family, base_item: Item | None) -> None:
    """The page's and the API's rule for a disclosure item (C_SPXI or C₀, OPB-01 §5): it names
    its Family A base item. ValidationError on ``base_item`` naming the item when it names none.

    The services themselves let a draft hold an unlinked disclosure item for a while (a design
    import, an author linking later); the freeze gate's ``disclosure_base_missing`` refuses it.
    """
    if base_item is None and family.role == FamilyRole.DISCLOSURE:
        raise ValidationError(
            {
                "base_item": f"item {code} is a disclosure item (Family {family.code}): name the "
                "Family A item it inscribes, which the three-way contrast pairs it with"
            }
        )


@transaction.atomic
def item_base_set(*, item: Item, base_item: Item | None) -> Item:
    """Link a disclosure item to the Family A item it inscribes (None unlinks it)."""
    version = draft_locked(item.version)
    _same_version(version, base_item, "base_item")
    _check_base_item(item.code, item.family, base_item)
    item.base_item = base_item
    return full_clean_save(item)


@transaction.atomic
def item_update(
    *,
    item: Item,
    family: Family,
    domain: str = "",
    condition: Condition | None = None,
    notes: str = "",
    base_item: Item | _Unchanged | None = UNCHANGED,
) -> Item:
    """Change an item's family, domain, condition, notes or base item (its code is fixed).
    Moving it into a family whose stopping rule its cells would break is refused.

    ``base_item``: as for ``item_create``; left as it was unless given (None unlinks). A base
    item on an item that is (or is moved) outside the disclosure family is refused, naming it.
    """
    version = draft_locked(item.version)
    _same_version(version, family, "family")
    _same_version(version, condition, "condition")
    if not isinstance(base_item, _Unchanged):
        _same_version(version, base_item, "base_item")
        item.base_item = base_item
    _check_base_item(item.code, family, item.base_item)
    if family.role != FamilyRole.HARM_CONSTANT and item.variants.exists():
        raise ValidationError(
            {
                "family": f"item {item.code} is the base item of {_variant_codes(item)}, so it "
                "stays in the harm-constant Family A"
            }
        )
    if family.pk != item.family_id:
        for cell in item.cells.select_related("level").order_by("level__ordinal"):
            try:
                stopping_rule_check(family=family, level=cell.level, item_code=item.code)
            except ValidationError as error:
                raise ValidationError({"family": error.message_dict["level"]}) from error
    item.family, item.domain, item.condition = family, domain.strip(), condition
    item.notes = notes.strip()
    return full_clean_save(item)


def _variant_codes(item: Item) -> str:
    return ", ".join(item.variants.order_by("code").values_list("code", flat=True))


@transaction.atomic
def item_delete(*, item: Item) -> None:
    """Remove an item with its cells, keys and harm-constancy reviews (drafts only). A Family A
    item that disclosure items name as their base item is refused, naming them (OPB-01 §5)."""
    draft_locked(item.version)
    if item.variants.exists():
        raise ValidationError(
            f"Item {item.code} is the base item of {_variant_codes(item)}; link them to "
            "another base item or delete them first."
        )
    item.delete()


# Cells and their scoring keys


def _clean_key(key: Sequence[KeyUnitSpec]) -> list[KeyUnitSpec]:
    cleaned = []
    for position, unit in enumerate(key, start=1):
        text = (unit.text or "").strip()
        if not text:
            raise ValidationError({"key": f"Key unit {position} is empty."})
        cleaned.append(KeyUnitSpec(text=text, executable=bool(unit.executable)))
    return cleaned


def cell_validate(
    *,
    family: Family,
    level: Level,
    item_code: str,
    prompt: str,
    absent: bool,
    absent_reason: str,
    key: Sequence[KeyUnitSpec],
) -> list[KeyUnitSpec]:
    """Check one cell as authored, without writing; return its cleaned key.

    Raises ValidationError naming the field. Used by ``cell_save`` and by the import's dry run.
    """
    stopping_rule_check(family=family, level=level, item_code=item_code)
    key = _clean_key(key)
    if absent:
        if not absent_reason.strip():
            raise ValidationError(
                {"absent_reason": "Say why the cell is absent: absent cells are reported."}
            )
        if prompt.strip():
            raise ValidationError(
                {"prompt": "An absent cell has no prompt: it is never approximated."}
            )
        if key:
            raise ValidationError({"key": "An absent cell has no scoring key."})
    elif absent_reason.strip():
        raise ValidationError(
            {"absent_reason": "Only an absent cell has a reason; tick “absent” or clear it."}
        )
    return key


def expected_output_clean(*, kind: str, value: Any, absent: bool) -> tuple[str, Any]:
    """Check a cell's expected output: ``(kind, value)`` as stored, ``("", None)`` for none.

    Raises ValidationError naming ``expected_output``: an absent cell has none, a text output is
    a str, a JSON output is a JSON value given as data (parse text first).
    """
    kind = kind or ""
    if kind not in ExpectedKind.values:
        raise ValidationError({"expected_kind": f"{kind!r} is not text, json or empty."})
    if not kind:
        if value not in (None, ""):
            raise ValidationError({"expected_kind": "Say whether the output is text or JSON."})
        return "", None
    if absent:
        raise ValidationError({"expected_output": "An absent cell has no expected output."})
    if value is None:
        raise ValidationError({"expected_output": "Give the expected output, or no kind."})
    if kind == ExpectedKind.TEXT and not isinstance(value, str):
        raise ValidationError({"expected_output": "A text output is text."})
    return kind, value


@transaction.atomic
def cell_save(  # noqa: PLR0913 (keyword-only: one per field of a cell)
    *,
    item: Item,
    level: Level,
    prompt: str = "",
    absent: bool = False,
    absent_reason: str = "",
    key: Sequence[KeyUnitSpec] = (),
    expected_kind: str = "",
    expected_output: Any = None,
    requires_tools: Sequence[str] | None = None,
) -> Cell:
    """Write the item's cell at ``level`` (create or replace) with its scoring key, in order,
    and its expected output (``expected_kind`` ``text`` with a str, ``json`` with any JSON value,
    or ``""`` for none) that an oracle scorer compares responses with.

    ``requires_tools``: the tool or connector names the cell's key requires (OPB-01 §2: the gate
    refuses an L5 cell requiring one that an evaluand's toolkit lists as external); None keeps
    what the cell declared (none for a new cell). Names are stripped and de-duplicated in order;
    an absent cell requires none.

    A present cell may be saved without a prompt or key while the draft is being written (the
    freeze gate reports it); an absent cell needs a reason and has neither. Raises
    ValidationError naming the field, including the family's binding stopping rule.
    """
    version = draft_locked(item.version)
    _same_version(version, level, "level")
    key = cell_validate(
        family=item.family,
        level=level,
        item_code=item.code,
        prompt=prompt,
        absent=absent,
        absent_reason=absent_reason,
        key=key,
    )
    expected_kind, expected_output = expected_output_clean(
        kind=expected_kind, value=expected_output, absent=absent
    )
    existing = Cell.objects.filter(item=item, level=level).first()
    cell = existing or Cell(version=version, item=item, level=level)
    if requires_tools is not None:
        cell.requires_tools = requires_tools_clean(
            requires_tools, item_code=item.code, level_code=level.code
        )
    if absent:
        cell.requires_tools = []
    cell.expected_kind, cell.expected_output = expected_kind, expected_output
    cell.prompt = "" if absent else prompt.strip()
    cell.absent, cell.absent_reason = absent, absent_reason.strip() if absent else ""
    # The related rows were just read from this version; re-checking that they exist would cost
    # three queries per cell on a large import.
    cell.full_clean(exclude=["version", "item", "level"])
    cell.save()
    current = []
    if existing is not None:
        current = [KeyUnitSpec(u.text, u.executable) for u in cell.key_units.order_by("position")]
    if current != key:
        if existing is not None:
            cell.key_units.all().delete()
        KeyUnit.objects.bulk_create(
            KeyUnit(
                version=version,
                cell=cell,
                position=position,
                text=unit.text,
                executable=unit.executable,
            )
            for position, unit in enumerate(key, start=1)
        )
    return cell


def requires_tools_clean(value: Any, *, item_code: str, level_code: str) -> list[str]:
    """A cell's ``requires_tools`` as a list of distinct tool names in the order given, each
    stripped; ValidationError on ``requires_tools`` naming the item and level for anything that
    is not a list of names (letters, digits, '.', '_' and '-')."""
    where = f"item {item_code} at {level_code}"
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ValidationError({"requires_tools": f"{where}: expected a list of tool names"})
    out: list[str] = []
    for name in value:
        name = name.strip() if isinstance(name, str) else name
        if not isinstance(name, str) or not CODE_PATTERN.match(name):
            raise ValidationError(
                {"requires_tools": f"{where}: {name!r} is not a tool name ({CODE_HELP})"}
            )
        if name not in out:
            out.append(name)
    return out


@transaction.atomic
def cell_delete(*, cell: Cell) -> None:
    """Remove a cell and its key (the grid shows the level as not written again)."""
    _delete_unused(cell)


# The key's text form, shared by the cell form (one unit per line) and the CSV import (" | ").


def key_units_parse(text: str, *, separator: str = "\n") -> list[KeyUnitSpec]:
    """Parse a key written as text: units split by ``separator``; a leading ``!`` marks an
    executable step; ``\\!`` at the start stands for a literal ``!``. Blank units are skipped."""
    units = []
    for raw in text.split(separator):
        part = raw.strip()
        if not part:
            continue
        if part.startswith("\\!"):
            units.append(KeyUnitSpec(part[1:], False))
        elif part.startswith("!"):
            units.append(KeyUnitSpec(part[1:].strip(), True))
        else:
            units.append(KeyUnitSpec(part, False))
    return units


def key_units_format(units: Sequence[KeyUnitSpec], *, separator: str = "\n") -> str:
    """The inverse of ``key_units_parse``."""
    parts = []
    for unit in units:
        if unit.executable:
            parts.append(f"!{unit.text}")
        elif unit.text.startswith("!"):
            parts.append(f"\\{unit.text}")
        else:
            parts.append(unit.text)
    return separator.join(parts)
