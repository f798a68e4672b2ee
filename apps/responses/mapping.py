"""The column mapping: how a record of any format names its administration and its attempt.

A mapping is a JSON object from *targets* to *sources*. A source is a column (or key) name,
``{"column": name}`` with optional ``replace_prefix: [old, new]`` and ``values: {from: to}``, or
``{"const": value}`` for a value every record shares. Keys of nested JSON objects are reached
with dots (``output.completion``). A given mapping is laid over the default one (columns named
like targets; Inspect's own fields for Inspect logs): it need only name what differs, and a target
mapped to null is dropped. ``docs/import-formats.md`` documents every target.

No Django imports.
"""

from collections.abc import Callable
from typing import Any

from apps.responses.formats import ImportProblem

TARGETS = {
    "position": "the administration's position in the frozen schedule (1-based)",
    "item": "the item's code",
    "level": "the level's code (may be left out when the design has one level)",
    "evaluand": "the evaluand's roster code, or its model identifier if that is unique",
    "repetition": "the repetition, 1-based (may be left out when the plan has one)",
    "terminal_outcome": (
        "completed, refused, error, timeout, budget_exhausted, rate_limited, malformed_output, "
        "parse_failure, safety_stop or platform_loss (completed when left out)"
    ),
    "response": "the response text",
    "started_at": "when the attempt started (ISO 8601; no offset means UTC)",
    "ended_at": "when the attempt ended (ISO 8601; no offset means UTC)",
    "rerun": "true when the record is a rerun of an administration already attempted",
    "evidence_gate": (
        "true when the attempt crossed the execution-evidence gate, false when it never did "
        "(a platform loss); when left out, every outcome but platform_loss crossed it"
    ),
}
ADMINISTRATION_BY_KEY = ("item", "level", "evaluand", "repetition")

INSPECT_DEFAULT = {
    "item": "id",
    "evaluand": "model",
    "repetition": "epoch",
    "terminal_outcome": "terminal_outcome",
    "response": "completion",
    "started_at": "started_at",
    "ended_at": "completed_at",
}


def default_mapping(format: str, columns: list[str]) -> dict[str, Any]:
    """What a mapping starts from: Inspect's own fields, or the columns named like targets."""
    if format == "inspect":
        return dict(INSPECT_DEFAULT)
    return {target: target for target in TARGETS if target in columns}


def effective_mapping(given: Any, *, format: str, columns: list[str]) -> Any:
    """The default mapping with ``given`` laid over it; a target given as null is dropped."""
    if not isinstance(given, dict):
        return given
    merged = {**default_mapping(format, columns), **given}
    return {target: source for target, source in merged.items() if source is not None}


def normalise_mapping(
    mapping: Any, *, columns: list[str] | None
) -> tuple[dict[str, dict], list[ImportProblem]]:
    """Check a mapping and bring every source to its dict form.

    ``columns`` is the file's header (CSV) or None when records may differ in their keys; a
    named column the header lacks is a problem of the mapping, reported once.
    """
    problems: list[ImportProblem] = []

    def problem(target: str, message: str) -> None:
        problems.append(ImportProblem(None, f"mapping.{target}" if target else "mapping", message))

    if not isinstance(mapping, dict):
        problem("", "must be a JSON object from targets to columns")
        return {}, problems
    normalised: dict[str, dict] = {}
    for target, source in mapping.items():
        if target not in TARGETS:
            problem(target, f"is not a target; the targets are {', '.join(TARGETS)}")
            continue
        spec = {"column": source} if isinstance(source, str) else source
        if not isinstance(spec, dict) or ("column" in spec) == ("const" in spec):
            problem(target, 'give a column name, {"column": name, …} or {"const": value}')
            continue
        unknown = set(spec) - {"column", "const", "values", "replace_prefix"}
        if unknown:
            problem(target, f"unknown option(s) {', '.join(sorted(unknown))}")
            continue
        if "column" in spec and (not isinstance(spec["column"], str) or not spec["column"]):
            problem(target, "the column must be a non-empty name")
            continue
        if "values" in spec and not isinstance(spec["values"], dict):
            problem(target, "values must be an object {from: to}")
            continue
        prefix = spec.get("replace_prefix")
        if prefix is not None and not (
            isinstance(prefix, list)
            and len(prefix) == 2
            and all(isinstance(part, str) for part in prefix)
        ):
            problem(target, "replace_prefix must be [old, new]")
            continue
        if columns is not None and "column" in spec and spec["column"] not in columns:
            problem(target, f"column {spec['column']!r} is not in the file's header")
            continue
        normalised[target] = spec
    by_key = [t for t in ADMINISTRATION_BY_KEY if t in normalised]
    if "position" in normalised and by_key:
        problem(
            "position",
            "name the administration by position or by item, level, evaluand and repetition, "
            "not both",
        )
    if "position" not in normalised and not {"item", "evaluand"} <= set(normalised):
        problem(
            "",
            "name the administration: map position, or map item and evaluand (and level and "
            "repetition unless the design has one of each)",
        )
    return normalised, problems


def lookup(fields: dict[str, Any], path: str) -> Any:
    """The value at ``path`` (a key, or dotted keys into nested objects); None when absent."""
    if path in fields:
        return fields[path]
    value: Any = fields
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def extract(spec: dict, fields: dict[str, Any]) -> tuple[Any, str | None]:
    """Apply one normalised source to a record's fields: ``(value, problem or None)``."""
    value = spec["const"] if "const" in spec else lookup(fields, spec["column"])
    if value is None:
        return None, None
    if "replace_prefix" in spec:
        old, new = spec["replace_prefix"]
        text = str(value)
        if not text.startswith(old):
            return None, f"{text!r} does not start with {old!r}"
        value = new + text[len(old) :]
    if "values" in spec:
        value = spec["values"].get(str(value).strip(), value)
    return value, None


def compile_source(spec: dict) -> Callable[[dict[str, Any]], tuple[Any, str | None]]:
    """``extract`` for one source, made once per import. A plain column without dots — the common
    case — is read with one dict lookup: a file of 100,000 rows reads 800,000 values."""
    if set(spec) == {"column"} and "." not in spec["column"]:
        column = spec["column"]
        return lambda fields: (fields.get(column), None)
    return lambda fields: extract(spec, fields)
