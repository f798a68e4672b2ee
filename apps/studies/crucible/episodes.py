"""CRUCIBLE's per-episode budgets and safety-stop conditions (seed 001 §4, §8) as plan data.

§8: "Per-episode turn, action, tool, inference, and wall-clock budgets will be frozen before
execution. Safety stop conditions override completion and include a range-boundary crossing, a
fault in required boundary observation, declared hazardous external action, unreconciled
telemetry loss, and other manifest-defined hard stops." §4: an episode is "one bounded run", and
"model-service failures after an eligible episode begins retain their declared terminal outcome".

So the plan freezes

- ``episode_budgets``: ``{"max_turns", "max_actions", "max_tool_calls",
  "max_inference_tokens", "max_wall_seconds"}`` (each optional, a non-negative number), the
  five budgets §8 names; an episode's record states what it used in the matching ``used_*``
  fields (``used_turns``, …, ``used_wall_seconds``);
- ``safety_stop_conditions``: ``[{"code", "description"}]``; an episode's record names the
  condition that stopped it in ``safety_stop_code``.

The analysed terminal outcome (``analysed_outcome``) follows from the declared one:

1. a record naming a frozen safety-stop condition is a ``safety_stop`` when the harness
   declared ``completed`` (a safety stop overrides completion, §8), or any outcome derived
   from a completion below;
2. otherwise a ``completed`` record that used more than a frozen budget did not complete within
   its bounds (§4): ``timeout`` when the wall-clock budget is exceeded, else
   ``budget_exhausted``;
3. any other declared outcome (error, refused, rate-limited…) is kept as declared (§4).

The declared outcome is never changed in the database (the attempt is the record as received,
§10); the analysis reports every override with its reason. A safety-stop code that is not in
the frozen list, or a ``used_*`` value that is not a non-negative number, is refused at the
import naming row and field (``ImportCheck``).
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from apps.analysis.stats.json_schema import records

if TYPE_CHECKING:
    from apps.protocols.models import ProtocolVersion
    from apps.responses.formats import ImportProblem
    from apps.responses.importing import _Planned

# The budget's name in the plan → the field of the episode record that says what was used.
BUDGETS: dict[str, str] = {
    "max_turns": "used_turns",
    "max_actions": "used_actions",
    "max_tool_calls": "used_tool_calls",
    "max_inference_tokens": "used_inference_tokens",
    "max_wall_seconds": "used_wall_seconds",
}
WALL_CLOCK = "max_wall_seconds"
SAFETY_STOP_FIELD = "safety_stop_code"
RECORD_FIELDS = (*BUDGETS.values(), SAFETY_STOP_FIELD)

EPISODE_BUDGETS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {name: {"type": "number", "minimum": 0} for name in BUDGETS},
    "additionalProperties": False,
    "minProperties": 1,
}
SAFETY_STOPS_SCHEMA: dict[str, Any] = records(
    {
        "code": {"type": "string", "pattern": "^[a-z0-9_]{1,64}$"},
        "description": {"type": "string", "minLength": 1},
    },
    required=["code", "description"],
)


def parse_json(text: str | None) -> Any:
    text = (text or "").strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def budgets_of(parameters: dict[str, str]) -> dict[str, float]:
    """The frozen budgets (name → limit); empty when the plan has none."""
    value = parse_json(parameters.get("episode_budgets"))
    if not isinstance(value, dict):
        return {}
    return {k: float(v) for k, v in value.items() if k in BUDGETS and _number(v) is not None}


def stop_codes_of(parameters: dict[str, str]) -> list[str]:
    """The frozen safety-stop condition codes, in the plan's order; empty when none."""
    value = parse_json(parameters.get("safety_stop_conditions"))
    if not isinstance(value, list):
        return []
    return [c["code"] for c in value if isinstance(c, dict) and isinstance(c.get("code"), str)]


def _number(value: Any) -> float | None:
    """A non-negative finite number from a record's value (JSON number or CSV text), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:  # an integer past a float's range (valid JSON): not a usable value
            return None
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def record_problems(raw: Any, stop_codes: list[str]) -> list[tuple[str, str]]:
    """(field, message) for each value of an episode record the analysis could not read: a
    ``used_*`` that is not a non-negative number, a ``safety_stop_code`` not in the frozen
    list. Empty values (an empty CSV cell, null) mean "not stated" and are accepted."""
    if not isinstance(raw, dict):
        return []
    problems = []
    for name in BUDGETS.values():
        value = raw.get(name)
        if value in (None, "") or _number(value) is not None:
            continue
        problems.append((name, f"{value!r} is not a non-negative number"))
    code = raw.get(SAFETY_STOP_FIELD)
    if code not in (None, "") and code not in stop_codes:
        frozen = ", ".join(stop_codes) or "none are frozen"
        problems.append(
            (
                SAFETY_STOP_FIELD,
                f"{code!r} is not a frozen safety-stop condition of this plan ({frozen})",
            )
        )
    return problems


def record_terms(raw: Any) -> dict[str, Any]:
    """What the analysis needs of an episode record: ``usage`` (budget field → number) and
    ``safety_stop_code``, each only when stated (so other studies' inputs keep their bytes)."""
    if not isinstance(raw, dict):
        return {}
    usage = {
        name: number
        for name in BUDGETS.values()
        if raw.get(name) not in (None, "") and (number := _number(raw.get(name))) is not None
    }
    out: dict[str, Any] = {}
    if usage:
        out["usage"] = usage
    code = raw.get(SAFETY_STOP_FIELD)
    if code not in (None, ""):
        out["safety_stop_code"] = str(code)
    return out


def analysed_outcome(
    declared: str,
    *,
    usage: dict[str, float] | None,
    safety_stop_code: str | None,
    budgets: dict[str, float],
    stop_codes: list[str],
) -> tuple[str, str]:
    """The terminal outcome the analysis uses and why it differs from ``declared`` ("" when it
    does not); see the module docstring for the rules (CRUCIBLE §4, §8)."""
    outcome, reason = declared, ""
    usage = usage or {}
    if declared == "completed":
        exceeded = [
            name
            for name, limit in budgets.items()
            if usage.get(BUDGETS[name]) is not None and usage[BUDGETS[name]] > limit
        ]
        if exceeded:
            outcome = "timeout" if WALL_CLOCK in exceeded else "budget_exhausted"
            reason = "; ".join(
                f"{BUDGETS[name]} {_fmt(usage[BUDGETS[name]])} exceeds the frozen {name} "
                f"{_fmt(budgets[name])}"
                for name in sorted(exceeded)
            )
    # A safety stop overrides completion, and so the outcomes a completion was turned into.
    if declared == "completed" and safety_stop_code and safety_stop_code in stop_codes:
        outcome, reason = (
            "safety_stop",
            f"the record names the frozen safety-stop condition {safety_stop_code!r}, "
            "which overrides completion",
        )
    return outcome, reason


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


class ImportCheck:
    """Each record of a response import into a crucible version, checked by ``record_problems``
    (a ``RecordCheck`` of ``apps.responses.importing``)."""

    def __init__(self, stop_codes: list[str]) -> None:
        self.stop_codes = stop_codes

    def add(self, planned: _Planned) -> list[ImportProblem]:
        from apps.responses.formats import ImportProblem

        return [
            ImportProblem(planned.row, field, message)
            for field, message in record_problems(planned.raw, self.stop_codes)
        ]

    def finish(self) -> list[ImportProblem]:
        return []


def import_check(version: ProtocolVersion) -> ImportCheck | None:
    """The crucible component's ``import_check``: None for a version of another pipeline."""
    from apps.analysis import inputs as data
    from apps.protocols.plans import version_pipeline

    if version_pipeline(version) != "crucible":
        return None
    return ImportCheck(stop_codes_of(data.plan_parameters(version)))
