"""The shape of a plan's decision table (OPB-01 §8 as data), checked before a freeze.

The format is the one ``apps/analysis/stats/decision.py`` evaluates: a list of rules
``{"id", "finding", "condition"}``, optionally with ``"excludes"`` (ids of rules whose findings
cannot hold together with this one's); a condition is ``{"all": [...]}`` or ``{"any": [...]}``
(they may nest) over clauses ``{"estimate": "beta_A", "op": "within", "value": "epsilon"}``,
with ``op`` one of ``OPS`` and ``value`` a number or the name of one of the plan's number or
integer parameters. This module adds what the evaluator cannot know — that a named parameter
exists in this plan and is a number — and names the rule and the place of every error.
"""

import math
from collections.abc import Mapping

from apps.protocols.models import ParameterKind

OPS = (">", "<", "within")
_NUMERIC_KINDS = (ParameterKind.NUMBER, ParameterKind.INTEGER)


def condition_text(node) -> str:
    """A condition as one line for people: ``beta_A within epsilon and beta_B > 0``."""
    if isinstance(node, dict) and len(node) == 1 and ("all" in node or "any" in node):
        key = next(iter(node))
        parts = [condition_text(child) for child in node[key] or []]
        joined = f" {'and' if key == 'all' else 'or'} ".join(parts)
        return f"({joined})" if len(parts) > 1 and key == "any" else joined
    if isinstance(node, dict):
        return f"{node.get('estimate')} {node.get('op')} {node.get('value')}"
    return str(node)


def _condition_errors(node, where: str, path: str, kinds: Mapping[str, str]) -> list[str]:
    if not isinstance(node, dict):
        return [f"{where}: {path} must be an object"]
    if "all" in node or "any" in node:
        if len(node) != 1:
            return [f"{where}: {path} needs exactly one of all or any"]
        key = next(iter(node))
        children = node[key]
        if not isinstance(children, list) or not children:
            return [f"{where}: {path}.{key} must be a non-empty list"]
        errors = []
        for index, child in enumerate(children):
            errors += _condition_errors(child, where, f"{path}.{key}[{index}]", kinds)
        return errors
    if set(node) != {"estimate", "op", "value"}:
        return [f"{where}: {path} is {{estimate, op, value}} (or all/any of those)"]
    errors = []
    estimate, op, value = node["estimate"], node["op"], node["value"]
    if not isinstance(estimate, str) or not estimate.strip():
        errors.append(f"{where}: {path}.estimate must name an estimate such as beta_A")
    if op not in OPS:
        errors.append(f"{where}: {path}.op must be one of {' '.join(OPS)}, not {op!r}")
    if op == "within" and isinstance(value, list):
        return errors + _margin_errors(value, estimate, where, path, kinds)
    return errors + _value_errors(value, op, where, path, kinds)


def _value_errors(value, op, where: str, path: str, kinds: Mapping[str, str]) -> list[str]:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return [f"{where}: {path}.value must be a number or a plan parameter's name"]
    if isinstance(value, str):
        kind = kinds.get(value)
        if kind is None:
            numeric = sorted(n for n, k in kinds.items() if k in _NUMERIC_KINDS)
            return [
                f"{where}: {path}.value {value!r} is not a parameter of this plan; its number "
                f"parameters are {', '.join(numeric) or 'none'}"
            ]
        if kind not in _NUMERIC_KINDS:
            return [f"{where}: {path}.value: parameter {value} is not a number"]
        return []
    if not math.isfinite(value):
        return [f"{where}: {path}.value must be finite"]
    if op == "within" and value <= 0:
        return [f"{where}: {path}.value: a 'within' margin must be > 0"]
    return []


def _margin_errors(value: list, estimate, where: str, path: str, kinds) -> list[str]:
    """An asymmetric margin [lower, upper], each a number or a parameter's name."""
    if len(value) != 2:
        return [f"{where}: {path}.value: an asymmetric margin is [lower, upper]"]
    errors = []
    for side, bound in zip(("lower", "upper"), value, strict=True):
        errors += [
            e.replace(f"{path}.value", f"{path}.value ({side})")
            for e in _value_errors(bound, "<", where, path, kinds)
        ]
    lo, hi = value
    if isinstance(lo, int | float) and not isinstance(lo, bool) and lo >= 0:
        errors.append(f"{where}: {path}.value: the margin's lower bound must be < 0")
    if isinstance(hi, int | float) and not isinstance(hi, bool) and hi <= 0:
        errors.append(f"{where}: {path}.value: the margin's upper bound must be > 0")
    return errors


def _rule_errors(index: int, rule, kinds: Mapping[str, str], seen: set) -> list[str]:
    where = f"decision table rule {index}"
    if not isinstance(rule, dict):
        return [f"{where}: a rule is an object with id, finding and condition"]
    rule_id = rule.get("id")
    if isinstance(rule_id, str) and rule_id:
        where += f" ({rule_id})"
    errors = []
    extra = sorted(set(rule) - {"id", "finding", "condition", "excludes"})
    if extra:
        errors.append(f"{where}: unknown keys {', '.join(extra)}")
    if not isinstance(rule_id, str) or not rule_id.strip():
        errors.append(f"{where}: id must be a non-empty text such as OPB01-8.1")
    elif rule_id in seen:
        errors.append(f"{where}: id {rule_id} is used twice")
    else:
        seen.add(rule_id)
    if not isinstance(rule.get("finding"), str) or not rule["finding"].strip():
        errors.append(f"{where}: finding must say what the result means")
    if "condition" not in rule:
        errors.append(f"{where}: condition is missing")
    else:
        errors += _condition_errors(rule["condition"], where, "condition", kinds)
    excludes = rule.get("excludes", [])
    if not isinstance(excludes, list) or not all(isinstance(x, str) for x in excludes):
        errors.append(f"{where}: excludes must be a list of rule ids")
    elif rule_id in excludes:
        errors.append(f"{where}: excludes names the rule itself")
    return errors


def decision_table_errors(table, parameter_kinds: Mapping[str, str]) -> list[str]:
    """Every way ``table`` is malformed, each naming its rule; empty when it is well formed.

    ``parameter_kinds`` maps the plan's parameter names to their kinds (conditions may name them).
    """
    if not isinstance(table, list):
        return ["the decision table must be a list of rules"]
    seen: set[str] = set()
    errors = []
    for index, rule in enumerate(table, start=1):
        errors += _rule_errors(index, rule, parameter_kinds, seen)
    for index, rule in enumerate(table, start=1):
        excludes = rule.get("excludes") if isinstance(rule, dict) else None
        if isinstance(excludes, list):
            for other in excludes:
                if isinstance(other, str) and other not in seen:
                    errors.append(
                        f"decision table rule {index} ({rule.get('id')}): excludes names "
                        f"{other!r}, which is not a rule of this table"
                    )
    return errors


def rule_estimates(table: object) -> list[tuple[str, str]]:
    """``(rule id, estimate name)`` for every clause of a (well-formed) decision table, in
    order; a rule without an id is named by its place (``rule 3``)."""
    out: list[tuple[str, str]] = []

    def walk(node: object, rule: str) -> None:
        if not isinstance(node, dict):
            return
        for key in ("all", "any"):
            if isinstance(node.get(key), list):
                for child in node[key]:
                    walk(child, rule)
        if isinstance(node.get("estimate"), str):
            out.append((rule, node["estimate"]))

    for index, rule in enumerate(table if isinstance(table, list) else [], start=1):
        if isinstance(rule, dict):
            rule_id = rule.get("id")
            name = rule_id if isinstance(rule_id, str) else f"rule {index}"
            walk(rule.get("condition"), name)
    return out
