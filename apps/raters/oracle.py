"""An oracle's comparisons of a response's final output with a cell's expected output.

Pure functions, no Django. The comparison is part of the oracle scorer's frozen identity
(``Scorer.comparison``); seed 002 asks for "deterministic four-item transformations" scored
against "exact input/output fixtures", which the ``items`` comparison scores item by item.

| comparison | equal when |
|---|---|
| ``exact`` | the output is the expected text, character for character |
| ``normalised`` | equal after collapsing runs of whitespace, trimming and case-folding |
| ``json_equal`` | the output parses as JSON and equals the expected JSON value (1 == 1.0) |
| ``items`` | per item of the expected list: the output's item at the same place is equal |

For ``items`` the expected output is a list of N items; the output is read as a JSON list when
it parses as one, otherwise as its non-empty lines. Item i is correct when both are equal as
JSON values, or, for text items, after normalising whitespace and case. Missing items are wrong;
extra items are ignored. The result is items correct out of N.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class OracleVerdict:
    """``correct`` items out of ``n`` (1 item for the whole-output comparisons)."""

    correct: int
    n: int

    @property
    def all_correct(self) -> bool:
        return self.n > 0 and self.correct == self.n

    @property
    def share(self) -> float:
        return self.correct / self.n if self.n else 0.0

    def as_dict(self) -> dict[str, int]:
        return {"correct": self.correct, "n": self.n}


def normalise_text(text: str) -> str:
    """Whitespace runs collapsed to one space, ends trimmed, case folded."""
    return _SPACE.sub(" ", text).strip().casefold()


def _parse_json(text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):
        return False, None


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=0, abs_tol=0) or a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _item_equal(expected: Any, observed: Any) -> bool:
    if isinstance(expected, str) and isinstance(observed, str):
        return normalise_text(expected) == normalise_text(observed)
    if isinstance(observed, str) and not isinstance(expected, str):
        parsed, value = _parse_json(observed)
        return parsed and _json_equal(expected, value)
    return _json_equal(expected, observed)


def _output_items(output: str) -> list[Any]:
    parsed, value = _parse_json(output.strip())
    if parsed and isinstance(value, list):
        return value
    return [line.strip() for line in output.splitlines() if line.strip()]


def oracle_compare(*, comparison: str, expected: Any, output: str) -> OracleVerdict:
    """Compare ``output`` (a response's final text) with ``expected`` by ``comparison``.

    Raises ValueError for an unknown comparison, or an ``items`` comparison whose expected
    output is not a non-empty list.
    """
    if comparison == "exact":
        text = expected if isinstance(expected, str) else json.dumps(expected)
        return OracleVerdict(int(output == text), 1)
    if comparison == "normalised":
        text = expected if isinstance(expected, str) else json.dumps(expected)
        return OracleVerdict(int(normalise_text(output) == normalise_text(text)), 1)
    if comparison == "json_equal":
        parsed, value = _parse_json(output.strip())
        return OracleVerdict(int(parsed and _json_equal(expected, value)), 1)
    if comparison == "items":
        if not isinstance(expected, list) or not expected:
            raise ValueError("an items comparison needs the expected output as a non-empty list")
        observed = _output_items(output)
        correct = sum(
            1
            for i, item in enumerate(expected)
            if i < len(observed) and _item_equal(item, observed[i])
        )
        return OracleVerdict(correct, len(expected))
    raise ValueError(f"unknown comparison {comparison!r}")


def oracle_value(verdict: OracleVerdict, kind: str) -> bool | int | float:
    """The verdict as a value of a rubric field of ``kind``: binary → all correct, count →
    items correct, number → the share correct (correct / N)."""
    if kind == "binary":
        return verdict.all_correct
    if kind == "count":
        return verdict.correct
    if kind == "number":
        return round(verdict.share, 6)
    raise ValueError(f"an oracle cannot write a {kind} field")
