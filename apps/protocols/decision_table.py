"""The shape of a plan's decision table (OPB-01 §8 as data).

A table is a list of rules ``{"id", "when", "finding"}``; ``when`` is
``{"all": [{"estimate": "beta_A", "op": "within", "value": "equivalence_margin"}, ...]}``, where
``op`` is one of ``OPS`` and ``value`` is a number or the name of one of the plan's number or
integer parameters. apps/analysis/stats/decision.py evaluates it; this module only checks that a
table is well formed, naming the row and the condition that is not.
"""

import re
from collections.abc import Mapping

from apps.protocols.models import ParameterKind

OPS = (">", "<", ">=", "<=", "within", "outside")
_IDENTIFIER = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_NUMERIC_KINDS = (ParameterKind.NUMBER, ParameterKind.INTEGER)


def _row_errors(index: int, row, parameter_kinds: Mapping[str, str], seen: set) -> list[str]:
    if not isinstance(row, dict):
        return [f"decision table row {index}: a rule is an object with id, when and finding"]
    rule_id = row.get("id")
    where = f"decision table row {index}" + (f" ({rule_id})" if isinstance(rule_id, str) else "")
    errors = []
    extra = sorted(set(row) - {"id", "when", "finding"})
    if extra:
        errors.append(f"{where}: unknown keys {', '.join(extra)}")
    if not isinstance(rule_id, str) or not _IDENTIFIER.match(rule_id):
        errors.append(f"{where}: id must be a name such as correct_discrimination")
    elif rule_id in seen:
        errors.append(f"{where}: id {rule_id} is used twice")
    else:
        seen.add(rule_id)
    if not isinstance(row.get("finding"), str) or not row["finding"].strip():
        errors.append(f"{where}: finding must say what the result means")
    when = row.get("when")
    conditions = when.get("all") if isinstance(when, dict) and set(when) == {"all"} else None
    if not isinstance(conditions, list) or not conditions:
        errors.append(f'{where}: when must be {{"all": [conditions…]}} with at least one')
        return errors
    for number, condition in enumerate(conditions, start=1):
        errors += _condition_errors(f"{where}, condition {number}", condition, parameter_kinds)
    return errors


def _condition_errors(where: str, condition, parameter_kinds: Mapping[str, str]) -> list[str]:
    if not isinstance(condition, dict) or set(condition) != {"estimate", "op", "value"}:
        return [f"{where}: a condition is {{estimate, op, value}}"]
    errors = []
    estimate, op, value = condition["estimate"], condition["op"], condition["value"]
    if not isinstance(estimate, str) or not _IDENTIFIER.match(estimate):
        errors.append(f"{where}: estimate must be a name such as beta_A")
    if op not in OPS:
        errors.append(f"{where}: op must be one of {' '.join(OPS)}, not {op!r}")
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        errors.append(f"{where}: value must be a number or a plan parameter's name")
    elif isinstance(value, str):
        kind = parameter_kinds.get(value)
        if kind is None:
            errors.append(f"{where}: {value!r} is not a parameter of this plan")
        elif kind not in _NUMERIC_KINDS:
            errors.append(f"{where}: parameter {value} is not a number")
    return errors


def decision_table_errors(table, parameter_kinds: Mapping[str, str]) -> list[str]:
    """Every way ``table`` is malformed, each naming its row; empty when it is well formed.

    ``parameter_kinds`` maps the plan's parameter names to their kinds (conditions may name them).
    """
    if not isinstance(table, list):
        return ["the decision table must be a list of rules"]
    seen: set[str] = set()
    errors = []
    for index, row in enumerate(table, start=1):
        errors += _row_errors(index, row, parameter_kinds, seen)
    return errors
