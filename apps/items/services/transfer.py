"""Bulk import and export of items, cells and scoring keys as CSV or JSON.

One row (CSV) or entry (JSON) per cell; the format is documented in ``docs/import-formats.md``.
An import is all-or-nothing: every row is validated first — by ``cell_validate``, the check the
forms and the API go through, so the binding stopping rule lives in one place — and every error
is reported with its row and field; only a file without errors is written, in one transaction
and in bulk (a fixed number of queries however long the file).
Rows are counted as a spreadsheet shows them: in a CSV the header is row 1 and the first cell
row 2; in JSON the first entry of ``cells`` is entry 1.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F

from apps.accounts.models import User
from apps.core.inputs import csv_width_problem, json_loads
from apps.deviations.models import EntryKind
from apps.deviations.services import version_log_append
from apps.items.models import (
    Cell,
    Condition,
    Family,
    FamilyRole,
    Item,
    KeyUnit,
    Level,
    expected_output_sha256,
)
from apps.items.services.design import (
    CODE_HELP,
    CODE_PATTERN,
    KeyUnitSpec,
    cell_validate,
    draft_locked,
    expected_output_clean,
    key_units_format,
    key_units_parse,
    stopping_rule_message,
)
from apps.protocols.import_frame import ImportProblem, import_key, numbered
from apps.protocols.integrity import version_integrity_require
from apps.protocols.models import ProtocolVersion

FORMATS = ("csv", "json")
JSON_FORMAT_NAME = "preregistry-design/1"
COLUMNS = (
    "family",
    "item",
    "domain",
    "condition",
    "level",
    "prompt",
    "absent",
    "absent_reason",
    "key",
    "base_item",
)
# A cell's expected output, which an oracle scorer compares responses with (issue 34 §8):
# ``expected_kind`` text, json or empty, and ``expected_output`` (in a CSV, JSON's text). Read
# when the file has them; a file without them leaves each cell's expected output as it is.
EXPECTED_COLUMNS = ("expected_kind", "expected_output")
ACCEPTED_COLUMNS = (*COLUMNS, *EXPECTED_COLUMNS)
REQUIRED_COLUMNS = ("family", "item", "level")
# The columns read as plain text (``absent`` is a yes/no, ``key`` a list of units).
TEXT_COLUMNS = tuple(name for name in COLUMNS if name not in ("absent", "key"))
MAX_IMPORT_BYTES = 5 * 1024 * 1024
MAX_IMPORT_ROWS = 20_000
# The longest value a design CSV field may hold: the csv module's own default. Checked here, not
# left to ``csv.field_size_limit``, which is process-wide and raised by the response import.
MAX_FIELD_CHARS = 131_072
# PostgreSQL text cannot hold NUL: refused by row and field here, not by the database (a 500).
NUL_MESSAGE = "contains a NUL character, which cannot be stored"
KEY_SEPARATOR = " | "
_TRUE = {"yes", "y", "true", "1", "absent"}
_FALSE = {"", "no", "n", "false", "0"}


@dataclass
class ImportRow:
    """One validated cell of the file and what importing it would do."""

    row: int
    family: str
    item: str
    domain: str
    condition: str
    level: str
    prompt: str
    absent: bool
    absent_reason: str
    key: list[KeyUnitSpec]
    # The Family A item a disclosure item inscribes (OPB-01 §5): a code, "" for none, or None
    # when the file has no base_item column (the item's link is then left as it is).
    base_item: str | None = None
    # The cell's expected output as stored (kind, value), or None when the file has no
    # expected-output column (the cell's is then left as it is).
    expected: tuple[str, Any] | None = None
    action: str = "create"  # create | replace | unchanged
    new_item: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "row": self.row,
            "family": self.family,
            "item": self.item,
            "domain": self.domain,
            "condition": self.condition,
            "level": self.level,
            "prompt": self.prompt,
            "absent": self.absent,
            "absent_reason": self.absent_reason,
            "key": [{"text": u.text, "executable": u.executable} for u in self.key],
            "base_item": self.base_item,
            **(
                {
                    "expected_kind": self.expected[0],
                    "expected_output": self.expected[1],
                    "expected_sha256": expected_output_sha256(*self.expected),
                }
                if self.expected is not None
                else {}
            ),
            "action": self.action,
            "new_item": self.new_item,
        }


@dataclass
class ImportPlan:
    """The dry run of an import: the rows it would write, or every error that prevents it."""

    format: str
    sha256: str
    filename: str = ""
    rows: list[ImportRow] = field(default_factory=list)
    errors: list[ImportProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def unit(self) -> str:
        return "row" if self.format == "csv" else "entry"

    def counts(self) -> dict[str, int]:
        return {
            "create": sum(r.action == "create" for r in self.rows),
            "replace": sum(r.action == "replace" for r in self.rows),
            "unchanged": sum(r.action == "unchanged" for r in self.rows),
            "new_items": len({r.item for r in self.rows if r.new_item}),
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "sha256": self.sha256,
            "rows_counted_as": (
                "spreadsheet rows: the header is row 1, the first cell row 2"
                if self.format == "csv"
                else "entries of 'cells', the first is entry 1"
            ),
            "ok": self.ok,
            "counts": self.counts(),
            "rows": [r.as_dict() for r in self.rows],
            "errors": [e.as_dict() for e in self.errors],
        }


class DesignImportRefused(ValidationError):
    """The import was refused and nothing was written; ``plan.errors`` says why, every one."""

    def __init__(self, plan: ImportPlan):
        self.plan = plan
        super().__init__([str(issue) for issue in plan.errors])


def import_format_for(filename: str, declared: str = "") -> str:
    """The format named by ``declared`` or by the file name's extension; ValidationError if
    neither says csv or json."""
    fmt = (declared or "").lower().strip() or filename.rsplit(".", 1)[-1].lower()
    if fmt not in FORMATS:
        raise ValidationError({"file": "Upload a .csv or .json file (or say which format it is)."})
    return fmt


# Reading the file into raw rows


def _read_csv(text: str, plan: ImportPlan) -> list[tuple[int, dict[str, Any]]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        plan.errors.append(ImportProblem(None, "file", "the file is empty"))
        return []
    except csv.Error as error:
        plan.errors.append(ImportProblem(1, "header", f"not readable as CSV: {error}"))
        return []
    if problem := csv_width_problem(header):
        plan.errors.append(ImportProblem(1, "header", problem))
        return []
    header = [h.strip().lower() for h in header]
    unknown = [h for h in header if h not in ACCEPTED_COLUMNS]
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    duplicated = sorted(name for name, count in Counter(header).items() if count > 1)
    for name in unknown:
        plan.errors.append(
            ImportProblem(
                1,
                name or "(blank)",
                f"unknown column; the columns are {', '.join(ACCEPTED_COLUMNS)}",
            )
        )
    for name in missing:
        plan.errors.append(ImportProblem(1, name, "required column is missing"))
    for name in duplicated:
        plan.errors.append(ImportProblem(1, name, "column appears twice"))
    if unknown or missing or duplicated:
        return []
    rows = []
    number = 1  # the header
    try:
        for number, values in numbered(reader, header=True):
            if not any(v.strip() for v in values):
                continue
            if len(values) != len(header):
                plan.errors.append(
                    ImportProblem(
                        number,
                        "row",
                        f"has {len(values)} fields; the header has {len(header)}",
                    )
                )
                continue
            too_long = [h for h, v in zip(header, values, strict=True) if len(v) > MAX_FIELD_CHARS]
            for name in too_long:
                plan.errors.append(
                    ImportProblem(
                        number, name, f"field larger than field limit ({MAX_FIELD_CHARS})"
                    )
                )
            nul = [h for h, v in zip(header, values, strict=True) if "\x00" in v]
            for name in nul:
                plan.errors.append(ImportProblem(number, name, NUL_MESSAGE))
            if not too_long and not nul:
                rows.append((number, dict(zip(header, values, strict=True))))
    except csv.Error as error:
        plan.errors.append(ImportProblem(number + 1, "row", f"not readable as CSV: {error}"))
    return rows


def _read_json(text: str, plan: ImportPlan) -> list[tuple[int, dict[str, Any]]]:
    try:
        data = json_loads(text)
    except (ValueError, RecursionError) as error:
        # ValueError: malformed, or a number longer than Python reads; RecursionError: nested
        # deeper than Python reads.
        reason = "nested too deeply" if isinstance(error, RecursionError) else error
        plan.errors.append(ImportProblem(None, "file", f"not valid JSON: {reason}"))
        return []
    entries = data.get("cells") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        plan.errors.append(
            ImportProblem(
                None, "file", "expected a list of cells, or an object with a 'cells' list"
            )
        )
        return []
    rows = []
    for number, entry in numbered(entries, header=False):
        if not isinstance(entry, dict):
            plan.errors.append(ImportProblem(number, "entry", "is not an object", unit="entry"))
            continue
        unknown = [k for k in entry if k not in ACCEPTED_COLUMNS]
        for name in unknown:
            plan.errors.append(
                ImportProblem(
                    number,
                    name,
                    f"unknown field; the fields are {', '.join(ACCEPTED_COLUMNS)}",
                    unit="entry",
                )
            )
        if "\\u0000" in json.dumps(entry):
            plan.errors.append(ImportProblem(number, "entry", NUL_MESSAGE, unit="entry"))
        elif not unknown:
            rows.append((number, entry))
    return rows


# Validating one raw row


def _text(raw: dict[str, Any], name: str) -> str:
    value = raw.get(name)
    if value is None:
        return ""
    if isinstance(value, bool | int | float):
        return str(value)
    if not isinstance(value, str):
        raise ValueError("must be text")
    return value.strip()


def _absent(raw: dict[str, Any]) -> bool:
    value = raw.get("absent")
    if isinstance(value, bool):
        return value
    text = str(value or "").strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"{value!r} is not yes or no")


def _key(raw: dict[str, Any], fmt: str) -> list[KeyUnitSpec]:
    value = raw.get("key")
    if value in (None, ""):
        return []
    if isinstance(value, str):
        stripped = value.strip()
        if fmt == "csv" and stripped.startswith("["):
            try:
                value = json.loads(stripped)
            except (ValueError, RecursionError) as error:
                reason = getattr(error, "msg", None) or (
                    "nested too deeply" if isinstance(error, RecursionError) else str(error)
                )
                raise ValueError(
                    f"starts with '[' but is not a JSON list ({reason}); use units separated "
                    "by ' | ' or a valid JSON list"
                ) from error
        else:
            return key_units_parse(value, separator=KEY_SEPARATOR if fmt == "csv" else "\n")
    if not isinstance(value, list):
        raise ValueError("must be a list of units")
    units = []
    for position, unit in enumerate(value, start=1):
        if isinstance(unit, str):
            parsed = key_units_parse(unit)
            if len(parsed) != 1:
                raise ValueError(f"unit {position} is empty or spans several lines")
            units.append(parsed[0])
        elif isinstance(unit, dict) and isinstance(unit.get("text"), str):
            executable = unit.get("executable", False)
            if not isinstance(executable, bool):
                raise ValueError(f"unit {position}'s 'executable' must be true or false")
            units.append(KeyUnitSpec(unit["text"], executable))
        else:
            raise ValueError(
                f"unit {position} must be text or an object with 'text' and 'executable'"
            )
    return units


@dataclass
class _Context:
    version: ProtocolVersion
    families: dict[str, Family]
    levels: dict[str, Level]
    conditions: dict[str, Condition]
    items: dict[str, Item]
    cells: dict[tuple[str, str], Cell]


def _context(version: ProtocolVersion) -> _Context:
    cells = {
        (c.item.code, c.level.code): c
        for c in Cell.objects.filter(version=version)
        .select_related("item", "level")
        .prefetch_related("key_units")
    }
    return _Context(
        version=version,
        families={f.code: f for f in Family.objects.filter(version=version)},
        levels={lv.code: lv for lv in Level.objects.filter(version=version)},
        conditions={c.code: c for c in Condition.objects.filter(version=version)},
        items={
            i.code: i
            for i in Item.objects.filter(version=version).select_related("family", "condition")
        },
        cells=cells,
    )


def _choices(mapping: dict[str, Any]) -> str:
    return ", ".join(sorted(mapping)) or "none yet"


def _named(
    values: dict[str, str],
    column: str,
    known: dict[str, Any],
    where: str,
    plural: str,
    issue: Callable[[str, str], None],
) -> Any:
    """The design row ``known`` holds under the code ``values[column]`` (None for a blank one);
    a code it does not hold is an issue of ``column`` that lists the codes there are."""
    found = known.get(values[column])
    if values[column] and found is None:
        issue(
            column,
            f"there is no {column} {values[column]!r} {where} ({plural}: {_choices(known)})",
        )
    return found


def _validate_row(
    number: int,
    raw: dict[str, Any],
    fmt: str,
    ctx: _Context,
    seen: dict[str, dict[str, Any]],
    plan: ImportPlan,
) -> None:
    unit = plan.unit
    issues: list[ImportProblem] = []

    def issue(name: str, message: str) -> None:
        issues.append(ImportProblem(number, name, message, unit=unit))

    values = {}
    for name in TEXT_COLUMNS:
        try:
            values[name] = _text(raw, name)
        except ValueError as error:
            issue(name, str(error))
            values[name] = ""
    for name in REQUIRED_COLUMNS:
        if not values[name] and not any(i.field == name for i in issues):
            issue(name, "is required")
    try:
        absent = _absent(raw)
    except ValueError as error:
        issue("absent", str(error))
        absent = False
    try:
        key = _key(raw, fmt)
    except ValueError as error:
        issue("key", str(error))
        key = []

    item_code = values["item"]
    if item_code and not CODE_PATTERN.match(item_code):
        issue("item", f"{item_code!r} is not a code: use {CODE_HELP}")
    family = _named(values, "family", ctx.families, "in this version", "families", issue)
    level = _named(values, "level", ctx.levels, "on this version's scale", "levels", issue)
    if values["base_item"] and family is not None and family.role != FamilyRole.DISCLOSURE:
        issue(
            "base_item",
            f"item {item_code} is in Family {family.code}, not a disclosure family: only C_SPXI "
            "and C₀ items name a base item (OPB-01 §5)",
        )
    _named(values, "condition", ctx.conditions, "in this version", "conditions", issue)

    existing = ctx.items.get(item_code)
    if existing is not None and family is not None and existing.family_id != family.pk:
        issue(
            "family",
            f"item {item_code} is in family {existing.family.code}; this row says "
            f"{family.code} (move an item on its own page)",
        )
    first = seen.get(item_code)
    if first is not None:
        for name in ("family", "domain", "condition", "base_item"):
            if first[name] != values[name]:
                issue(
                    name,
                    f"item {item_code} has {name} {first[name]!r} on {unit} {first['row']}; "
                    f"this {unit} says {values[name]!r}",
                )
        if values["level"] in first["levels"]:
            issue(
                "level",
                f"item {item_code} at {values['level']} appears twice "
                f"(first on {unit} {first['levels'][values['level']]})",
            )
    elif item_code:
        seen[item_code] = {**values, "row": number, "levels": {}}
    if item_code and values["level"]:
        seen[item_code]["levels"].setdefault(values["level"], number)

    expected = _expected(raw, fmt, absent, issue)
    if family is not None and level is not None and not issues:
        try:
            key = cell_validate(
                family=family,
                level=level,
                item_code=item_code,
                prompt=values["prompt"],
                absent=absent,
                absent_reason=values["absent_reason"],
                key=key,
            )
        except ValidationError as error:
            for name, messages in error.message_dict.items():
                for message in messages:
                    issue(name, message)
    if issues:
        plan.errors.extend(issues)
        return

    row = ImportRow(
        row=number,
        family=values["family"],
        item=item_code,
        domain=values["domain"],
        condition=values["condition"],
        level=values["level"],
        prompt="" if absent else values["prompt"],
        absent=absent,
        absent_reason=values["absent_reason"] if absent else "",
        key=key,
        base_item=values["base_item"] if "base_item" in raw else None,
        expected=expected,
        new_item=existing is None,
    )
    cell = ctx.cells.get((item_code, values["level"]))
    if cell is None:
        row.action = "create"
    else:
        current = [KeyUnitSpec(u.text, u.executable) for u in cell.key_units.all()]
        same = (
            existing is not None  # a written cell's item exists
            and cell.prompt == row.prompt
            and cell.absent == row.absent
            and cell.absent_reason == row.absent_reason
            and current == key
            and existing.domain == row.domain
            and (existing.condition.code if existing.condition else "") == row.condition
            and (row.base_item is None or _base_code(existing) == row.base_item)
            and (row.expected is None or (cell.expected_kind, cell.expected_output) == row.expected)
        )
        row.action = "unchanged" if same else "replace"
    plan.rows.append(row)


def _expected(
    raw: dict[str, Any], fmt: str, absent: bool, issue: Callable[[str, str], None]
) -> tuple[str, Any] | None:
    """The row's expected output as ``cell_save`` stores it (``expected_output_clean``), or None
    when the file has no expected-output column. In a CSV a JSON output is its JSON text."""
    if not any(name in raw for name in EXPECTED_COLUMNS):
        return None
    kind = raw.get("expected_kind")
    if kind is not None and not isinstance(kind, str):
        issue("expected_kind", f"{kind!r} is not text, json or empty")
        return None
    kind = (kind or "").strip().lower()
    value = raw.get("expected_output")
    if fmt == "csv" and isinstance(value, str):
        if value == "":
            value = None
        elif kind == "json":
            try:
                value = json.loads(value)
            except (ValueError, RecursionError) as error:
                reason = getattr(error, "msg", None) or "nested too deeply"
                issue("expected_output", f"is not JSON ({reason})")
                return None
    try:
        return expected_output_clean(kind=kind, value=value, absent=absent)
    except ValidationError as error:
        for name, messages in error.message_dict.items():
            for message in messages:
                issue(name, message)
        return None


def _base_code(item: Item) -> str:
    return item.base_item.code if item.base_item else ""


def _check_bases(ctx: _Context, seen: dict[str, dict[str, Any]], plan: ImportPlan) -> None:
    """Each named base item must be a harm-constant (Family A) item of the version or of the
    file itself (it may come later in the file): an issue on the item's first row otherwise."""
    families_in_file = {code: first["family"] for code, first in seen.items()}
    named: dict[str, ImportRow] = {}
    for row in plan.rows:
        if row.base_item:
            named.setdefault(row.item, row)
    for row in named.values():
        base = row.base_item or ""
        existing = ctx.items.get(base)
        family_code = existing.family.code if existing is not None else families_in_file.get(base)
        family = ctx.families.get(family_code or "")
        if family is None:
            message = f"there is no item {base!r} in this version or this file"
        elif family.role != FamilyRole.HARM_CONSTANT:
            message = (
                f"item {row.item}'s base item {base} is in Family {family.code}, not the "
                "harm-constant Family A"
            )
        else:
            continue
        plan.errors.append(ImportProblem(row.row, "base_item", message, unit=plan.unit))


def design_import_plan(
    *, version: ProtocolVersion, content: bytes, fmt: str, filename: str = ""
) -> ImportPlan:
    """The dry run: parse and validate every row against the version's design and return what
    would be written, or every error (row, field, message). Writes nothing."""
    plan = ImportPlan(format=fmt, sha256=import_key(content), filename=filename)
    if fmt not in FORMATS:
        plan.errors.append(ImportProblem(None, "format", f"{fmt!r} is not csv or json"))
        return plan
    if not version.is_draft:
        plan.errors.append(
            ImportProblem(
                None, "version", f"{version} is {version.status}: its design cannot change"
            )
        )
        return plan
    if len(content) > MAX_IMPORT_BYTES:
        plan.errors.append(
            ImportProblem(None, "file", f"is larger than {MAX_IMPORT_BYTES // (1024 * 1024)} MB")
        )
        return plan
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        plan.errors.append(ImportProblem(None, "file", f"is not UTF-8 text ({error.reason})"))
        return plan
    raw_rows = _read_csv(text, plan) if fmt == "csv" else _read_json(text, plan)
    if len(raw_rows) > MAX_IMPORT_ROWS:
        plan.errors.append(ImportProblem(None, "file", f"has more than {MAX_IMPORT_ROWS} rows"))
        return plan
    if not raw_rows and not plan.errors:
        plan.errors.append(ImportProblem(None, "file", "has no cells"))
    ctx = _context(version)
    seen: dict[str, dict[str, Any]] = {}
    for number, raw in raw_rows:
        _validate_row(number, raw, fmt, ctx, seen, plan)
    _check_bases(ctx, seen, plan)
    plan.errors.sort(key=lambda issue: issue.row or 0)
    return plan


def _write_plan(version: ProtocolVersion, plan: ImportPlan) -> None:
    """Write a validated plan in a fixed number of queries (bulk inserts and updates).

    Every row passed ``cell_validate`` — the same check, stopping rule included, that
    ``cell_save`` applies — while the plan was made, inside this transaction and under the
    version's row lock. As a last guard the stopping rule is checked once more over the whole
    version in one query; a breach refuses the import and rolls it back.
    """
    ctx = _context(version)
    rows = [row for row in plan.rows if row.action != "unchanged"]
    first_rows: dict[str, ImportRow] = {}
    for row in plan.rows:
        first_rows.setdefault(row.item, row)

    new_items, changed_items = [], []
    for code, row in first_rows.items():
        condition = ctx.conditions.get(row.condition) if row.condition else None
        item = ctx.items.get(code)
        if item is None:
            new_items.append(
                Item(
                    version=version,
                    family=ctx.families[row.family],
                    code=code,
                    domain=row.domain,
                    condition=condition,
                )
            )
        elif item.domain != row.domain or item.condition_id != getattr(condition, "pk", None):
            item.domain, item.condition = row.domain, condition
            changed_items.append(item)
    Item.objects.bulk_create(new_items)
    Item.objects.bulk_update(changed_items, ["domain", "condition"])
    items = {item.code: item for item in Item.objects.filter(version=version)}
    linked = []
    for code, row in first_rows.items():
        if row.base_item is None:
            continue
        base_id = items[row.base_item].pk if row.base_item else None
        if items[code].base_item_id != base_id:
            items[code].base_item_id = base_id
            linked.append(items[code])
    Item.objects.bulk_update(linked, ["base_item"])

    replaced, created = [], []
    for row in rows:
        cell = ctx.cells.get((row.item, row.level))
        if cell is None:
            cell = Cell(version=version, item=items[row.item], level=ctx.levels[row.level])
            created.append(cell)
        else:
            replaced.append(cell)
        cell.prompt, cell.absent, cell.absent_reason = row.prompt, row.absent, row.absent_reason
        if row.expected is not None:
            cell.expected_kind, cell.expected_output = row.expected
    KeyUnit.objects.filter(cell__in=[cell.pk for cell in replaced]).delete()
    Cell.objects.bulk_update(
        replaced, ["prompt", "absent", "absent_reason", "expected_kind", "expected_output"]
    )
    Cell.objects.bulk_create(created)
    cell_ids = {
        (item_id, level_id): pk
        for pk, item_id, level_id in Cell.objects.filter(version=version).values_list(
            "pk", "item_id", "level_id"
        )
    }
    KeyUnit.objects.bulk_create(
        KeyUnit(
            version=version,
            cell_id=cell_ids[(items[row.item].pk, ctx.levels[row.level].pk)],
            position=position,
            text=unit.text,
            executable=unit.executable,
        )
        for row in rows
        for position, unit in enumerate(row.key, start=1)
    )
    breach = (
        Cell.objects.filter(version=version, item__family__max_level__isnull=False)
        .filter(level__ordinal__gt=F("item__family__max_level"))
        .select_related("item__family", "level")
        .first()
    )
    if breach is not None:
        plan.errors.append(
            ImportProblem(
                None,
                "level",
                stopping_rule_message(breach.item.family, breach.level.code, breach.item.code),
            )
        )
        raise DesignImportRefused(plan)


@transaction.atomic
def design_import(
    *,
    version: ProtocolVersion,
    content: bytes,
    fmt: str,
    actor: User | None = None,
    filename: str = "",
) -> ImportPlan:
    """Import a design file: all rows or none. Items are created or updated (domain, condition,
    and the base item when the file has that column) and cells created or replaced, with their
    keys; cells the file does not mention are left
    alone. Every row is checked by ``cell_validate`` (the check ``cell_save`` applies, binding
    stopping rule included) before anything is written. The import is written to the
    deviation log.

    Raises DesignImportRefused (a ValidationError) with every error when any row is invalid.
    """
    version = draft_locked(version)
    plan = design_import_plan(version=version, content=content, fmt=fmt, filename=filename)
    if not plan.ok:
        raise DesignImportRefused(plan)
    _write_plan(version, plan)
    counts = plan.counts()
    name = f" from {filename}" if filename else ""
    version_log_append(
        version,
        kind=EntryKind.IMPORT,
        rationale=(
            f"Design import into {version}{name} (sha256 {plan.sha256[:16]}, {fmt}): "
            f"{counts['create']} cells created, {counts['replace']} replaced, "
            f"{counts['unchanged']} unchanged; {counts['new_items']} new items."
        ),
        actor=actor,
    )
    return plan


# Export


def _export_rows(version: ProtocolVersion) -> list[dict[str, Any]]:
    cells = (
        Cell.objects.filter(version=version)
        .select_related("item__family", "item__condition", "item__base_item", "level")
        .prefetch_related("key_units")
        .order_by("item__family__code", "item__code", "level__ordinal")
    )
    rows = []
    for cell in cells:
        item = cell.item
        rows.append(
            {
                "family": item.family.code,
                "item": item.code,
                "domain": item.domain,
                "condition": item.condition.code if item.condition else "",
                "level": cell.level.code,
                "prompt": cell.prompt,
                "absent": cell.absent,
                "absent_reason": cell.absent_reason,
                "key": [
                    KeyUnitSpec(u.text, u.executable)
                    for u in sorted(cell.key_units.all(), key=lambda u: u.position)
                ],
                "base_item": _base_code(item),
                "expected_kind": cell.expected_kind,
                "expected_output": cell.expected_output if cell.expected_kind else None,
            }
        )
    # Only a design with an expected output has the columns, so exports of the others read as
    # they always did.
    if not any(row["expected_kind"] for row in rows):
        for row in rows:
            del row["expected_kind"], row["expected_output"]
    return rows


def _csv_expected(kind: str, value: Any) -> str:
    if not kind:
        return ""
    if kind == "json":
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def _csv_key(units: list[KeyUnitSpec]) -> str:
    if any(KEY_SEPARATOR.strip() in u.text for u in units) or (
        units and units[0].text.startswith("[")
    ):
        return json.dumps(
            [{"text": u.text, "executable": u.executable} for u in units], ensure_ascii=False
        )
    return key_units_format(units, separator=KEY_SEPARATOR)


def design_export(*, version: ProtocolVersion, fmt: str) -> str:
    """The version's cells (items, cells, keys, and the cells' expected outputs when any cell
    has one: ``EXPECTED_COLUMNS``) as CSV or JSON text that ``design_import`` reads back
    unchanged. Items without any cell have no row.

    A frozen version's rows are checked against its hash and its freeze entry first
    (``version_integrity_require``): raises ``IntegrityAlarm`` (a ValidationError) rather than
    export rows that are no longer what was frozen.
    """
    # Pages' cache is fine here: it is never older than the rows (apps/protocols/integrity.py).
    version_integrity_require(version=version, use_cache=True, refused="Not exported.")
    rows = _export_rows(version)
    expected = bool(rows) and "expected_kind" in rows[0]
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\r\n")
        writer.writerow([*COLUMNS, *(EXPECTED_COLUMNS if expected else ())])
        for row in rows:
            tail = (
                [row["expected_kind"], _csv_expected(row["expected_kind"], row["expected_output"])]
                if expected
                else []
            )
            writer.writerow(
                [
                    row["family"],
                    row["item"],
                    row["domain"],
                    row["condition"],
                    row["level"],
                    row["prompt"],
                    "yes" if row["absent"] else "no",
                    row["absent_reason"],
                    _csv_key(row["key"]),
                    row["base_item"],
                    *tail,
                ]
            )
        return buffer.getvalue()
    if fmt == "json":
        for row in rows:
            row["key"] = [{"text": u.text, "executable": u.executable} for u in row["key"]]
        document = {
            "format": JSON_FORMAT_NAME,
            "protocol": version.protocol.code,
            "version": version.label,
            "cells": rows,
        }
        return json.dumps(document, ensure_ascii=False, indent=2) + "\n"
    raise ValidationError({"format": f"{fmt!r} is not csv or json"})
