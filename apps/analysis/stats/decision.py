"""OPB-01 §8's decision table as data, a small safe evaluator, and the §9 analysis order.

A rule is ``{"id", "finding", "condition"}`` with an optional ``"excludes": [rule ids]``; a
condition is ``{"all": [...]}`` or ``{"any": [...]}`` over clauses
``{"estimate": name, "op": op, "value": v}`` (conditions may nest). ``value`` is a number or the
name of a frozen plan parameter such as ``"epsilon"``; for ``"within"`` it may also be a pair
``[lower, upper]`` (numbers or parameter names) for an asymmetric margin. Nothing is
``eval``-ed: the operators are a fixed table.

Exclusive findings: a rule's ``excludes`` names the rules whose findings cannot be true together
with its own (OPB-01 §8's "no penalty", "penalty", "partial penalty" and "anomalous" are one such
set; the force confound is not in it). Exclusion is symmetric: declaring it on one side is enough.
When two exclusive rules match together, neither finding is reported: the outcome carries a
contradiction, "contradictory: rules X and Y both hold", with the evidence of both rules, and
findings of rules outside the contradiction are reported as usual.

Operators and the criteria behind them (OPB-01 §7 "criterion for β > 0", "≈ 0 within ε"):

- ``">"``: with ``criterion="interval"`` (default) the interval's lower bound is > value; with
  ``criterion="point"`` the point estimate is.
- ``"<"``: the interval's upper bound (or the point estimate) is < value.
- ``"within"``: the whole interval lies strictly inside the open margin (−value, value) (or
  (lower, upper) for a pair). Strict, as in Schuirmann's (1987) two one-sided tests, whose null
  hypotheses are Δ ≤ −ε and Δ ≥ ε: an interval bound equal to ±ε is not within, the same as
  ``stats.equivalence.tost`` and the OPB pipeline's TOST stage decide. This is TOST-consistent
  when the interval given is the (1 − 2α) interval; an estimate may carry that interval
  separately as ``equivalence_interval``, which ``"within"`` then uses instead of ``interval``.

The table itself is data of the frozen plan (the ``opb`` plan template carries OPB-01 §8's
rules), never a default of this module: a finding comes only from the table that was
preregistered. Named estimates of OPB-01's table: ``beta_A``, ``beta_B`` (slopes on level of
Family A and B over L0–L3), ``beta_LF`` (the L × Family interaction with Family coded 1 for A
and 0 for B, so β_LF = β_A − β_B) and ``beta_force`` (slope of degradation across the
illocutionary-force arm, §6.4). A rule whose estimates are missing is reported as not
evaluable, never as unmatched.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Criterion = Literal["interval", "point"]
OPERATORS = (">", "<", "within")

# OPB-01 §9: β_B first, then β_A, then the disclosure arms (Family C and its sham C₀).
ANALYSIS_ORDER = ("B", "A", "disclosure")
_STAGE_OF = {
    "B": "B",
    "A": "A",
    "disclosure": "disclosure",
    "C": "disclosure",
    "C0": "disclosure",
    "C_SPXI": "disclosure",
}


@dataclass(frozen=True)
class Evidence:
    """One clause as evaluated: what was compared with what, and whether it held."""

    estimate: str
    op: str
    value: float | tuple[float, float]
    point: float
    interval: tuple[float, float] | None
    satisfied: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            "op": self.op,
            "value": list(self.value) if isinstance(self.value, tuple) else self.value,
            "point": self.point,
            "interval": list(self.interval) if self.interval else None,
            "satisfied": self.satisfied,
        }


@dataclass(frozen=True)
class RuleOutcome:
    rule_id: str
    finding: str
    matched: bool
    evaluable: bool
    evidence: tuple[Evidence, ...]
    missing: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule_id": self.rule_id,
            "finding": self.finding,
            "matched": self.matched,
            "evaluable": self.evaluable,
            "evidence": [e.to_dict() for e in self.evidence],
            "missing": list(self.missing),
        }


@dataclass(frozen=True)
class Contradiction:
    """Two rules declared exclusive that both matched: no finding is drawn from either."""

    rule_ids: tuple[str, str]
    evidence: tuple[Evidence, ...]

    @property
    def message(self) -> str:
        return f"contradictory: rules {self.rule_ids[0]} and {self.rule_ids[1]} both hold"

    def to_dict(self) -> dict[str, Any]:
        return {
            "rules": list(self.rule_ids),
            "message": self.message,
            "evidence": [e.to_dict() for e in self.evidence],
        }


@dataclass(frozen=True)
class DecisionOutcome:
    """Every rule's outcome.

    ``findings`` lists, in table order, the findings of the matched rules that are not in a
    contradiction; ``contradictions`` lists each pair of exclusive rules that matched together.
    """

    rules: tuple[RuleOutcome, ...]
    criterion: str
    parameters: dict[str, Any]
    contradictions: tuple[Contradiction, ...] = ()

    @property
    def matched(self) -> tuple[RuleOutcome, ...]:
        return tuple(r for r in self.rules if r.matched)

    @property
    def contradicted(self) -> frozenset[str]:
        return frozenset(i for c in self.contradictions for i in c.rule_ids)

    @property
    def findings(self) -> tuple[str, ...]:
        return tuple(r.finding for r in self.matched if r.rule_id not in self.contradicted)

    @property
    def not_evaluable(self) -> tuple[RuleOutcome, ...]:
        return tuple(r for r in self.rules if not r.evaluable)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rules": [r.to_dict() for r in self.rules],
            "matched": [r.rule_id for r in self.matched],
            "findings": list(self.findings),
            "contradictions": [c.to_dict() for c in self.contradictions],
            "criterion": self.criterion,
            "parameters": dict(self.parameters),
        }


def validate_decision_table(table: Sequence[Mapping[str, Any]]) -> None:
    """Check a decision table's structure before it is frozen or evaluated.

    Raises:
        ValueError: naming the rule and the field, e.g.
            ``rule 'OPB01-8.2': condition.all[1].op: unknown operator '>='``.
    """
    if isinstance(table, Mapping | str) or not isinstance(table, Sequence):
        raise ValueError("decision table must be a sequence of rules")
    seen: set[str] = set()
    for i, rule in enumerate(table):
        label = f"rule #{i}"
        if not isinstance(rule, Mapping):
            raise ValueError(f"{label}: must be a mapping")
        rule_id = rule.get("id")
        if not isinstance(rule_id, str) or not rule_id:
            raise ValueError(f"{label}: field 'id' must be a non-empty string")
        label = f"rule {rule_id!r}"
        if rule_id in seen:
            raise ValueError(f"{label}: field 'id' is duplicated")
        seen.add(rule_id)
        if not isinstance(rule.get("finding"), str) or not rule["finding"]:
            raise ValueError(f"{label}: field 'finding' must be a non-empty string")
        extra = set(rule) - {"id", "finding", "condition", "excludes"}
        if extra:
            raise ValueError(f"{label}: unknown field(s) {sorted(extra)}")
        if "condition" not in rule:
            raise ValueError(f"{label}: field 'condition' is missing")
        _validate_condition(rule["condition"], label, "condition")
    ids = [rule["id"] for rule in table]
    for rule in table:
        excludes = rule.get("excludes", [])
        label = f"rule {rule['id']!r}"
        if isinstance(excludes, str) or not isinstance(excludes, Sequence):
            raise ValueError(f"{label}: field 'excludes' must be a list of rule ids")
        for other in excludes:
            if other == rule["id"]:
                raise ValueError(f"{label}: excludes: a rule cannot exclude itself")
            if other not in ids:
                raise ValueError(f"{label}: excludes: no rule {other!r} in the table")


def exclusive_pairs(table: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The pairs of rules declared exclusive (either side's ``excludes``), in table order.

    Raises:
        ValueError: a malformed table (see :func:`validate_decision_table`).
    """
    validate_decision_table(table)
    order = {rule["id"]: i for i, rule in enumerate(table)}
    pairs: set[tuple[str, str]] = set()
    for rule in table:
        for other in rule.get("excludes", []):
            first, second = sorted((rule["id"], other), key=order.__getitem__)
            pairs.add((first, second))
    return sorted(pairs, key=lambda p: (order[p[0]], order[p[1]]))


def numeric_parameters(parameters: Mapping[str, Any]) -> dict[str, float]:
    """The plan parameters whose text reads as a finite number, as floats (name → value).

    What a decision table's conditions may name (``{"value": "epsilon"}``, the ``parameters`` of
    ``evaluate_decision_table``) out of a run's parameter snapshot (name → text): every other
    parameter (JSON, a choice, blank, ``nan``) is left out, so a rule naming it is reported as
    lacking it.
    """
    out = {}
    for name, text in parameters.items():
        try:
            value = float(str(text).strip())
        except ValueError:
            continue
        if math.isfinite(value):
            out[name] = value
    return out


def evaluate_decision_table(
    estimates: Mapping[str, Mapping[str, Any]],
    parameters: Mapping[str, float],
    *,
    table: Sequence[Mapping[str, Any]],
    criterion: Criterion = "interval",
) -> DecisionOutcome:
    """Evaluate every rule of a decision table against named estimates.

    Args:
        estimates: name → ``{"estimate": float, "interval": (lo, hi)}``, optionally with an
            ``"equivalence_interval": (lo, hi)`` (the (1 − 2α) interval) for ``"within"``.
        parameters: frozen plan parameters that conditions name, e.g. ``{"epsilon": 0.05}``.
        table: the rules, as the frozen plan holds them (OPB-01's is the ``opb`` plan
            template's ``decision_table`` in ``apps/studies/opb/pipeline.py``).
        criterion: the plan's criterion for ``>``/``<``: ``"interval"`` (bound beyond the
            value) or ``"point"`` (point estimate beyond the value).

    Returns:
        :class:`DecisionOutcome` listing, for every rule, whether it matched, the evidence
        (estimates and intervals that decided it) and any missing estimates. Several rules may
        match at once (e.g. a penalty and the force confound); all are reported.

    Raises:
        ValueError: a malformed table (see :func:`validate_decision_table`), an unknown
            criterion, a parameter the table names but ``parameters`` lacks, a non-finite
            or malformed estimate or interval.
    """
    if criterion not in ("interval", "point"):
        raise ValueError(f"criterion must be 'interval' or 'point', got {criterion!r}")
    validate_decision_table(table)
    outcomes = []
    for rule in table:
        evidence: list[Evidence] = []
        missing: list[str] = []
        result = _evaluate(
            rule["condition"],
            estimates,
            parameters,
            criterion,
            evidence,
            missing,
            f"rule {rule['id']!r}",
        )
        outcomes.append(
            RuleOutcome(
                rule_id=rule["id"],
                finding=rule["finding"],
                matched=result is True,
                evaluable=result is not None,
                evidence=tuple(evidence),
                missing=tuple(dict.fromkeys(missing)),
            )
        )
    by_id = {o.rule_id: o for o in outcomes}
    contradictions = tuple(
        Contradiction((x, y), by_id[x].evidence + by_id[y].evidence)
        for x, y in exclusive_pairs(table)
        if by_id[x].matched and by_id[y].matched
    )
    return DecisionOutcome(
        rules=tuple(outcomes),
        criterion=criterion,
        parameters=dict(parameters),
        contradictions=contradictions,
    )


def contradiction_warnings(
    estimates: Mapping[str, Mapping[str, Any]],
    parameters: Mapping[str, float],
    *,
    table: Sequence[Mapping[str, Any]],
    criterion: Criterion = "interval",
) -> list[str]:
    """Messages for exclusive rules that match together on ``estimates`` (pure).

    For the freeze gate's computability check: run on the estimates of its synthetic run, an
    empty list means the table's exclusive findings did not co-match there. Each message reads
    "contradictory: rules X and Y both hold".

    Raises:
        ValueError: as :func:`evaluate_decision_table`.
    """
    outcome = evaluate_decision_table(estimates, parameters, table=table, criterion=criterion)
    return [c.message for c in outcome.contradictions]


def order_family_analyses(families: Iterable[str]) -> list[str]:
    """Order family analyses as OPB-01 §9 requires: B, then A, then the disclosure arms.

    "C", "C0", "C_SPXI" and "disclosure" all belong to the disclosure stage and keep their
    given relative order. This is analysis order only; scorers never see families.

    Raises:
        ValueError: a label outside §9's order (e.g. the force-control arm, which the caller
            must place explicitly).
    """
    labels = list(families)
    unknown = [f for f in labels if f not in _STAGE_OF]
    if unknown:
        raise ValueError(f"families not in the OPB-01 §9 analysis order: {unknown!r}")
    return sorted(labels, key=lambda f: ANALYSIS_ORDER.index(_STAGE_OF[f]))


def _validate_condition(node: Any, label: str, path: str) -> None:
    if not isinstance(node, Mapping):
        raise ValueError(f"{label}: {path}: must be a mapping")
    if "all" in node or "any" in node:
        if len(node) != 1:
            raise ValueError(f"{label}: {path}: needs exactly one of 'all' or 'any'")
        key = next(iter(node))
        children = node[key]
        if isinstance(children, str) or not isinstance(children, Sequence) or not children:
            raise ValueError(f"{label}: {path}.{key}: must be a non-empty list")
        for i, child in enumerate(children):
            _validate_condition(child, label, f"{path}.{key}[{i}]")
        return
    extra = set(node) - {"estimate", "op", "value"}
    if extra:
        raise ValueError(f"{label}: {path}: unknown field(s) {sorted(extra)}")
    for field in ("estimate", "op", "value"):
        if field not in node:
            raise ValueError(f"{label}: {path}.{field}: is missing")
    if not isinstance(node["estimate"], str) or not node["estimate"]:
        raise ValueError(f"{label}: {path}.estimate: must be a non-empty string")
    if node["op"] not in OPERATORS:
        raise ValueError(f"{label}: {path}.op: unknown operator {node['op']!r}; use {OPERATORS}")
    value = node["value"]
    if node["op"] == "within" and isinstance(value, Sequence) and not isinstance(value, str):
        _validate_margin(value, label, path)
        return
    _validate_value(value, label, path)
    if node["op"] == "within" and not isinstance(value, str) and value <= 0:
        raise ValueError(f"{label}: {path}.value: a 'within' margin must be > 0")


def _validate_margin(value: Sequence[Any], label: str, path: str) -> None:
    if len(value) != 2:
        raise ValueError(f"{label}: {path}.value: a 'within' pair is [lower, upper]")
    for bound in value:
        _validate_value(bound, label, path)
    lo, hi = value
    if not isinstance(lo, str) and lo >= 0:
        raise ValueError(f"{label}: {path}.value: a margin's lower bound must be < 0")
    if not isinstance(hi, str) and hi <= 0:
        raise ValueError(f"{label}: {path}.value: a margin's upper bound must be > 0")


def _validate_value(value: Any, label: str, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"{label}: {path}.value: must be a number or a parameter name")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{label}: {path}.value: must be finite")


def _evaluate(
    node: Mapping[str, Any],
    estimates: Mapping[str, Mapping[str, Any]],
    parameters: Mapping[str, float],
    criterion: Criterion,
    evidence: list[Evidence],
    missing: list[str],
    label: str,
) -> bool | None:
    """Three-valued: True, False, or None when a missing estimate leaves the answer open."""
    if "all" in node or "any" in node:
        results = [
            _evaluate(c, estimates, parameters, criterion, evidence, missing, label)
            for c in node.get("all", node.get("any"))
        ]
        if "all" in node:
            return False if False in results else (None if None in results else True)
        return True if True in results else (None if None in results else False)
    name, op = node["estimate"], node["op"]
    raw_value = node["value"]
    value: float | tuple[float, float]
    bound = 0.0  # a one-sided clause's threshold: ">" and "<" always take the scalar branch
    if op == "within" and isinstance(raw_value, Sequence) and not isinstance(raw_value, str):
        lower, upper = tuple(_resolve(v, parameters, label) for v in raw_value)
        value = (lower, upper)
    else:
        value = bound = _resolve(raw_value, parameters, label)
        lower, upper = -bound, bound
    if estimates.get(name) is None:
        missing.append(name)
        return None
    point, interval = _estimate(estimates[name], name, op)
    if op == "within" or criterion == "interval":
        if interval is None:
            missing.append(f"{name}.interval")
            return None
        if op == "within":
            # Strict, as TOST: a bound on ±ε is not inside the margin (Schuirmann 1987).
            ok = lower < interval[0] and interval[1] < upper
        else:
            ok = interval[0] > bound if op == ">" else interval[1] < bound
    else:
        ok = point > bound if op == ">" else point < bound
    evidence.append(Evidence(name, op, value, point, interval, ok))
    return ok


def _resolve(value: Any, parameters: Mapping[str, Any], label: str) -> float:
    if isinstance(value, str):
        if value not in parameters:
            raise ValueError(f"{label}: parameter {value!r} has no value in the plan")
        value = parameters[value]
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{label}: value {number!r} is not finite")
    return number


def _estimate(entry: Any, name: str, op: str) -> tuple[float, tuple[float, float] | None]:
    if not isinstance(entry, Mapping) or "estimate" not in entry:
        raise ValueError(f"estimate {name!r} must be a mapping with an 'estimate' key")
    point = float(entry["estimate"])
    if not math.isfinite(point):
        raise ValueError(f"estimate {name!r} is not finite: {point!r}")
    key = (
        "equivalence_interval" if op == "within" and "equivalence_interval" in entry else "interval"
    )
    raw = entry.get(key)
    if raw is None:
        return point, None
    if len(raw) != 2:
        raise ValueError(f"estimate {name!r}: {key} must be (lower, upper)")
    lo, hi = float(raw[0]), float(raw[1])
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        raise ValueError(f"estimate {name!r}: {key} {raw!r} is not a finite (lower, upper)")
    return point, (lo, hi)
