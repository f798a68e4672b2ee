"""How a machine scorer's values over a cell's repetitions combine: Inspect AI's epoch reducers.

An Inspect task run with ``epochs=k`` gives each sample k times; the response importer reads
each epoch as a repetition of the administration (``apps.responses.mapping.INSPECT_DEFAULT``),
so a scorer's values of one cell and one evaluand over its repetitions are its epochs. Each
roster entry freezes, with the version, how they combine (``ScorerRosterEntry.epochs``):

| rule | the analysed value | field kinds |
|---|---|---|
| ``each`` | every epoch is its own observation (the default) | any |
| ``mean`` | the mean of the epochs' values | number, count |
| ``mode`` | the most frequent value (ties: the first in repetition order) | all but text kinds |
| ``max`` | the largest value | binary, ordinal, count, number |
| ``at_least:<k>`` | true when at least k epochs are true | binary |

The reducers are Inspect's own (``inspect_ai.scorer``: ``mean_score``, ``mode_score``,
``max_score``, ``at_least``; https://inspect.aisi.org.uk/scorers.html#reducing-epochs), with
one difference of shape: the value keeps the field's kind (``at_least`` gives true or false,
not 1.0 or 0.0), so it is checked and analysed as the field's values are. A reduced value
stands for the cell and evaluand: it is the value of the group's first scored repetition,
and the scorer has no value of that field on the others (``apps.raters.final.machine_values``).
Agreement, judge validation and the audit's strata compare the scorer with the reviewers epoch
by epoch instead, on each response's own value (``apps.raters.final.comparison_inputs``).

No Django imports.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

EACH = "each"
RULES = ("each", "mean", "mode", "max", "at_least:<k>")
_AT_LEAST = re.compile(r"^at_least:([1-9][0-9]*)$")
# The field kinds each reducer gives a value of the same kind for.
KINDS = {
    "mean": ("number", "count"),
    "mode": ("binary", "categorical", "ordinal", "count", "number"),
    "max": ("binary", "ordinal", "count", "number"),
    "at_least": ("binary",),
}


def epochs_name(rule: str) -> str:
    """The reducer's name without its argument: ``at_least:2`` → ``at_least``."""
    return rule.partition(":")[0]


def epochs_problem(rule: str) -> str | None:
    """What is wrong with the rule ``rule``, or None."""
    if rule in ("each", "mean", "mode", "max") or _AT_LEAST.match(rule):
        return None
    return f"{rule!r} is not a rule for epochs; give one of {', '.join(RULES)} (k ≥ 1)."


def epochs_fit(rule: str, kind: str) -> bool:
    """Whether the rule gives a value of a field of ``kind`` (``each`` fits every kind)."""
    return rule == EACH or kind in KINDS.get(epochs_name(rule), ())


def epochs_reduce(rule: str, values: list[Any]) -> Any:
    """The epochs' ``values`` (in repetition order, none None) combined by ``rule``.

    Raises ValueError for ``each`` (nothing to combine) or an unknown rule.
    """
    if not values:
        return None
    name = epochs_name(rule)
    if name == "mean":
        return round(sum(values) / len(values), 6)
    if name == "mode":
        return Counter(values).most_common(1)[0][0]
    if name == "max":
        return max(values)
    if match := _AT_LEAST.match(rule):
        return sum(1 for v in values if v is True) >= int(match.group(1))
    raise ValueError(f"{rule!r} combines no epochs")
