"""The decision table as rows of a form (one rule a row, its clauses as columns), not JSON.

Each row is one rule of the table ``apps/protocols/decision_table.py`` describes: its id, the
finding, the ids it excludes, whether all or any of its clauses must hold, and up to
``clause_slots`` clauses ``estimate op value`` (``within`` with an upper bound is an asymmetric
margin ``[value, upper]``). The rows build the same JSON the plan stores; the shape is checked by
``version_update`` (``decision_table_errors``), whose messages name the rule and the place, and
are put back on the row and the field they name. A table with nested conditions (``all`` inside
``any``) cannot be shown as rows: it stays editable as JSON on the draft page and by the API.
"""

import math
import re
from collections.abc import Sequence

from django import forms

from apps.protocols.decision_table import OPS

_MATCH = (("all", "all of the clauses hold"), ("any", "any of the clauses holds"))


def table_is_flat(table) -> bool:
    """Whether every rule's condition is one ``all``/``any`` list of plain clauses."""
    if not isinstance(table, list):
        return False
    for rule in table:
        if not isinstance(rule, dict):
            return False
        condition = rule.get("condition")
        if not isinstance(condition, dict) or len(condition) != 1:
            return False
        key = next(iter(condition))
        if key not in ("all", "any") or not isinstance(condition[key], list):
            return False
        for clause in condition[key]:
            if not isinstance(clause, dict) or set(clause) != {"estimate", "op", "value"}:
                return False
            value = clause["value"]
            if isinstance(value, list) and len(value) != 2:
                return False
    return True


def clause_slots(table) -> int:
    """How many clause columns the rows need: the longest rule's clauses plus one free."""
    longest = 0
    if isinstance(table, list):
        for rule in table:
            condition = rule.get("condition") if isinstance(rule, dict) else None
            if isinstance(condition, dict) and condition:
                clauses = next(iter(condition.values()))
                if isinstance(clauses, list):
                    longest = max(longest, len(clauses))
    return max(longest + 1, 3)


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _value(text: str):
    """A typed value: a number when it reads as one, else a parameter's name (the table's
    check then says whether that parameter exists and is a number)."""
    text = text.strip()
    try:
        number = float(text)
    except ValueError:
        return text
    if not math.isfinite(number):
        return text
    return int(number) if number.is_integer() and re.fullmatch(r"[+-]?\d+", text) else number


class DecisionRuleForm(forms.Form):
    """One rule of the decision table, with ``slots`` clause columns."""

    rule_id = forms.CharField(label="Rule id", max_length=100, required=False)
    finding = forms.CharField(
        label="Finding", required=False, widget=forms.Textarea(attrs={"rows": 2})
    )
    excludes = forms.CharField(
        label="Excludes (rule ids, comma-separated)", max_length=1000, required=False
    )
    match = forms.ChoiceField(label="Holds when", choices=_MATCH, initial="all")

    def __init__(self, *args, slots: int = 3, estimates: Sequence[tuple[str, str]] = (), **kwargs):
        """``estimates``: ``(name, meaning)`` of what the plan's pipeline produces, the choices
        of each clause's estimate (issue #37 §9); none known (no pipeline chosen) leaves the
        field free text. A name the table already holds that the pipeline does not produce
        stays offered, marked, so the page shows it and the gate names it."""
        super().__init__(*args, **kwargs)
        self.slots = slots
        for n in range(1, slots + 1):
            name = f"estimate_{n}"
            if estimates:
                held = self.data.get(self.add_prefix(name)) if self.is_bound else None
                held = held or self.initial.get(name)
                known = {e for e, _ in estimates}
                extra = (
                    [(held, f"{held} (not produced by the pipeline)")]
                    if held and held not in known
                    else []
                )
                self.fields[name] = forms.ChoiceField(
                    label=f"Clause {n}: estimate",
                    required=False,
                    choices=[("", "—"), *[(e, f"{e}: {m}") for e, m in estimates], *extra],
                )
            else:
                self.fields[name] = forms.CharField(
                    label=f"Clause {n}: estimate", max_length=100, required=False
                )
            self.fields[f"op_{n}"] = forms.ChoiceField(
                label=f"Clause {n}: comparison",
                required=False,
                choices=[("", "—"), *[(op, op) for op in OPS]],
            )
            self.fields[f"value_{n}"] = forms.CharField(
                label=f"Clause {n}: threshold or margin (number or parameter)",
                max_length=100,
                required=False,
            )
            self.fields[f"upper_{n}"] = forms.CharField(
                label=f"Clause {n}: upper margin (asymmetric within only)",
                max_length=100,
                required=False,
            )

    def clause_rows(self) -> list[list]:
        """The bound fields of each clause slot, for the template."""
        return [
            [self[f"{part}_{n}"] for part in ("estimate", "op", "value", "upper")]
            for n in range(1, self.slots + 1)
        ]

    @staticmethod
    def initial_for(rule: dict) -> dict:
        condition = rule.get("condition") or {"all": []}
        match = next(iter(condition))
        initial = {
            "rule_id": rule.get("id", ""),
            "finding": rule.get("finding", ""),
            "excludes": ", ".join(rule.get("excludes") or []),
            "match": match,
        }
        for n, clause in enumerate(condition[match], start=1):
            value = clause.get("value")
            lower, upper = value if isinstance(value, list) else (value, None)
            initial[f"estimate_{n}"] = clause.get("estimate", "")
            initial[f"op_{n}"] = clause.get("op", "")
            initial[f"value_{n}"] = _text(lower)
            initial[f"upper_{n}"] = _text(upper)
        return initial

    def rule(self) -> dict:
        """The rule as the plan stores it (clauses whose estimate, comparison and value are all
        empty are left out)."""
        data = self.cleaned_data
        clauses = []
        self.clause_slots_used = []
        for n in range(1, self.slots + 1):
            estimate = (data.get(f"estimate_{n}") or "").strip()
            op = data.get(f"op_{n}") or ""
            value = (data.get(f"value_{n}") or "").strip()
            upper = (data.get(f"upper_{n}") or "").strip()
            if not (estimate or op or value or upper):
                continue
            typed = [_value(value), _value(upper)] if upper else _value(value)
            clauses.append({"estimate": estimate, "op": op, "value": typed})
            self.clause_slots_used.append(n)
        rule: dict = {"id": (data.get("rule_id") or "").strip()}
        excludes = [x.strip() for x in (data.get("excludes") or "").split(",") if x.strip()]
        if excludes:
            rule["excludes"] = excludes
        rule["finding"] = (data.get("finding") or "").strip()
        rule["condition"] = {data.get("match") or "all": clauses}
        return rule


DecisionRuleFormSet = forms.formset_factory(
    DecisionRuleForm, extra=1, can_delete=True, can_order=True, max_num=200, validate_max=True
)

_WHERE = re.compile(r"^decision table rule (\d+)")
_CLAUSE = re.compile(r"condition\.(?:all|any)\[(\d+)\]\.(estimate|op|value)")


def place_error(rows: list[DecisionRuleForm], message: str) -> bool:
    """Put one ``decision_table_errors`` message on the row and field it names; False when it
    names none (the page shows it above the rows)."""
    where = _WHERE.match(message)
    if not where or not 1 <= int(where.group(1)) <= len(rows):
        return False
    form = rows[int(where.group(1)) - 1]
    clause = _CLAUSE.search(message)
    if clause:
        slots = getattr(form, "clause_slots_used", [])
        index = int(clause.group(1))
        name = f"{clause.group(2)}_{slots[index]}" if index < len(slots) else None
    elif ": id " in message:
        name = "rule_id"
    elif ": finding " in message:
        name = "finding"
    elif ": excludes " in message:
        name = "excludes"
    else:
        name = None
    form.add_error(name, message)
    return True
