"""Route choice's (seed 002, the ``paired_blocks`` pipeline) model of the world for its design
diagnosis (issue #35 §1).

The PI declares the plan's **decision endpoint** (``decision_endpoint``, the endpoint whose
contrasts are the named estimates ``A_friction``, …), per sub-study, in the endpoint's own
unit (a probability for a 0/1 endpoint):

- each design factor's main effect (``effect:<sub-study>:<factor>``: the mean at the factor's
  second level minus the first, averaged over the other factors — the pipeline's main-effect
  contrast, Montgomery 2017, *Design and Analysis of Experiments*, 9th ed., §6.2) and each
  interaction the plan lists (``effect:<sub-study>:<f>×<g>``: ``f``'s effect at ``g``'s second
  level minus at its first); the mean over the conditions (``baseline``), the same for both;
- the variance components: the SD of the tasks' effects (``task_sd``: a task is harder or
  easier in every round) and of the task blocks' (``block_sd``: one task × model × round);
  for a numeric endpoint the SD of one administration around its block's mean
  (``residual_sd``);
- the share of administrations lost to an infrastructure failure (seed 002's separate stratum,
  never in a denominator) and the share with no response.

The data: with the factors coded c_f = ±1 (second level +1), the mean of administration j of
block b of task t in sub-study s is
``μ = baseline + Σ_f β_sf·c_f/2 + Σ_(f,g) γ_s,fg·c_f·c_g/4 + u_t + v_b``,
u_t ~ N(0, task_sd²), v_b ~ N(0, block_sd²), so the main-effect contrast of the conditions'
means is β_sf and the interaction contrast γ_s,fg exactly (the 2^k design's orthogonal
contrasts, Montgomery §6.2). A 0/1 endpoint is 1 with probability μ clipped to [0, 1] (a linear
probability model: where μ leaves [0, 1] the clipping pulls the contrast toward 0, and the
diagnosis shows that bias); a numeric one is μ + N(0, residual_sd²) (rounded and floored at 0
for a count). Controls' tasks are drawn from the same world. Every other endpoint keeps the
computability gate's synthetic values.

Which endpoints can be simulated: a rubric field (binary, count or number; the oracle's or a
reviewer's final value), ``alternate_route`` (the session's tool call is one the plan's
mapping routes to the alternate, else one it routes to another authorised route), and the
session counts ``tokens``, ``operations`` and ``interruptions``. Any other decision endpoint is
refused with the reason (PlanInputError, shown on the diagnosis page).

The inquiry: for each model × sub-study, each declared contrast of the decision endpoint with
its planted value; its test is its reported interval (the score interval of a 0/1 endpoint,
else the block bootstrap's) excluding 0.

The size of the curve is the rounds: each task's task blocks per model (seed 002: a model's
task blocks in a sub-study are its tasks × rounds).

The simulations compute only the decision endpoint's contrasts (``fast_parameters``): exact,
not an approximation — the other endpoints are never read by the inquiry, and every endpoint's
bootstrap draws from its own seed.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from apps.analysis.diagnosis.diagnosands import Draw
from apps.analysis.diagnosis.world import (
    Raw,
    SizeParameter,
    WorldModel,
    missing,
    number,
    rate,
    with_observations,
    world_schema,
)
from apps.analysis.pipelines.base import PlanInputError, json_parameter
from apps.studies.paired_blocks.pipeline import (
    _default,
    _interval,
    _list,
    sub_study_map,
)

COUNT_COLUMNS = ("tokens", "operations", "interruptions")
ROUTE_ENDPOINT = "alternate_route"
NUMERIC_KINDS = ("count", "number")


def _effect_name(sub: str, contrast: str) -> str:
    return f"effect:{sub}:{contrast}"


def _decision_endpoint(raw: Raw) -> str:
    parameters = raw.get("parameters") or {}
    return (parameters.get("decision_endpoint") or "").strip() or "authorised_route"


def _endpoint_kind(raw: Raw) -> tuple[str, str]:
    """(decision endpoint, how it is simulated: ``binary``, ``count``, ``number``, ``route``,
    ``column``). Raises PlanInputError for an endpoint the world cannot simulate."""
    endpoint = _decision_endpoint(raw)
    fields = {f["name"]: f["kind"] for f in raw["rubric_fields"]}
    if fields.get(endpoint) in ("binary", *NUMERIC_KINDS):
        return endpoint, fields[endpoint]
    routes = json_parameter(raw.get("parameters") or {}, "tool_routes", None) or {}
    if endpoint == ROUTE_ENDPOINT and _route_tools(routes) is not None:
        return endpoint, "route"
    if endpoint in COUNT_COLUMNS:
        return endpoint, "column"
    raise PlanInputError(
        f"the design diagnosis simulates a decision endpoint that is a binary, count or number "
        f"rubric field, {ROUTE_ENDPOINT} (with an alternate and another authorised route in "
        f"tool_routes) or one of {', '.join(COUNT_COLUMNS)}; this plan's is {endpoint!r}",
        where="parameter decision_endpoint",
    )


def _route_tools(routes: Mapping[str, Any]) -> tuple[str, str] | None:
    """(a tool routed to the alternate, a tool routed to another authorised route), or None."""
    tools = routes.get("tools") or {}
    alternate = routes.get("alternate")
    others = [r for r in routes.get("authorised") or [] if r and r != alternate]
    to_alternate = sorted(t for t, r in tools.items() if alternate and r == alternate)
    to_other = sorted(t for t, r in tools.items() if r in others)
    if not to_alternate or not to_other:
        return None
    return to_alternate[0], to_other[0]


def _factors(raw: Raw) -> list[dict[str, Any]]:
    return sorted(
        (f for f in raw["task_blocks"]["factors"] if f["role"] == "design"),
        key=lambda f: f["name"],
    )


def _contrasts(raw: Raw) -> list[str]:
    """The declared contrasts: each design factor, then each two-level interaction the plan
    lists (``f×g``) between design factors."""
    names = [f["name"] for f in _factors(raw)]
    out = list(names)
    for text in _list(raw.get("parameters") or {}, "interactions"):
        first, _, second = text.partition(":")
        first, second = first.strip(), second.strip()
        if first in names and second in names and first != second:
            out.append(f"{first}×{second}")
    return out


def _sub_studies(raw: Raw) -> list[dict[str, Any]]:
    return list(json_parameter(raw.get("parameters") or {}, "sub_studies", _default("sub_studies")))


def schema(raw: Raw) -> dict[str, Any]:
    endpoint, kind = _endpoint_kind(raw)
    binary = kind in ("binary", "route")
    unit = "a difference of probabilities" if binary else f"in {endpoint}'s unit"
    high = 1.0 if binary else 1e9
    properties: dict[str, Any] = {}
    factors = {f["name"]: f["levels"] for f in _factors(raw)}
    for sub in _sub_studies(raw):
        for contrast in _contrasts(raw):
            if "×" in contrast:
                first, second = contrast.split("×")
                meaning = (
                    f"the {first} effect at {second}={factors[second][1]} minus at "
                    f"{second}={factors[second][0]}"
                )
            else:
                meaning = (
                    f"the mean at {contrast}={factors[contrast][1]} minus at "
                    f"{contrast}={factors[contrast][0]}, over the other factors"
                )
            properties[_effect_name(sub["code"], contrast)] = number(
                f"{sub['code']}_{contrast} ({endpoint})",
                f"Sub-study {sub['code']}: {meaning}, {unit}; 0: no effect.",
                0.0,
                -high,
                high,
            )
    if binary:
        properties["baseline"] = rate(
            f"Mean {endpoint}", f"The share of administrations with {endpoint} = 1.", 0.5
        )
        properties["task_sd"] = number(
            "Task SD",
            "How much tasks differ in the chance of the endpoint (SD of a task's effect).",
            0.05,
            0.0,
            0.5,
        )
        properties["block_sd"] = number(
            "Task-block SD",
            "How much task blocks (one task × model × round) differ beyond their task.",
            0.05,
            0.0,
            0.5,
        )
    else:
        properties["baseline"] = number(
            f"Mean {endpoint}", f"The mean of {endpoint} over the conditions.", 1.0, -1e9, 1e9
        )
        properties["task_sd"] = number(
            "Task SD", f"The SD of a task's effect on {endpoint}.", 0.5, 0.0, 1e9
        )
        properties["block_sd"] = number(
            "Task-block SD",
            f"The SD of a task block's effect (one task × model × round) on {endpoint}.",
            0.5,
            0.0,
            1e9,
        )
        properties["residual_sd"] = number(
            "Residual SD",
            f"The SD of one administration's {endpoint} around its block's mean.",
            1.0,
            0.0,
            1e9,
        )
    properties["infrastructure_failure"] = rate(
        "Infrastructure failures",
        "The share of administrations lost to a transport, budget or provider failure: "
        "their own stratum, in no endpoint's denominator.",
        0.01,
        high=0.5,
    )
    properties["missingness"] = rate(
        "Missing responses",
        "The share of administrations with no scored response (their block is incomplete).",
        0.01,
        high=0.5,
    )
    return world_schema(properties)


def _n_design(raw: Raw) -> int:
    return int(2 ** len(_factors(raw)))


def _mean(
    world: dict[str, Any], sub: str, contrasts: list[str], code: dict[str, float], base: float
) -> float:
    """μ of one administration (module docstring) over its task's and block's ``base``."""
    mu = float(world["baseline"]) + base
    for contrast in contrasts:
        effect = float(world[_effect_name(sub, contrast)])
        if "×" in contrast:
            first, second = contrast.split("×")
            mu += effect * code[first] * code[second] / 4
        else:
            mu += effect * code[contrast] / 2
    return mu


def _failed(adm: dict[str, Any]) -> None:
    """Mark ``adm``'s session an infrastructure failure (transport), as an import records it."""
    adm["terminal_outcome"] = "platform_loss"
    if "columns" in adm:
        adm["columns"]["infrastructure_failure"] = "transport"
        return
    record = adm["record"]
    metadata = {**record.get("metadata", {}), "infrastructure_failure": "transport"}
    adm["record"] = {**record, "metadata": metadata}


def simulate(raw: Raw, world: dict[str, Any], rng: np.random.Generator) -> Raw:
    endpoint, kind = _endpoint_kind(raw)
    design = raw["design"]
    family_sub = sub_study_map(_sub_studies(raw), [f["code"] for f in design["families"]])
    family_of = {i["code"]: i["family"] for i in design["items"]}
    factors = {f["name"]: f["levels"] for f in _factors(raw)}
    contrasts = _contrasts(raw)
    n_design = _n_design(raw)
    tools = _route_tools(json_parameter(raw.get("parameters") or {}, "tool_routes", None) or {})
    task_effect = {item: rng.normal(0, float(world["task_sd"])) for item in sorted(family_of)}
    block_effect: dict[tuple[Any, ...], float] = {}
    failure, lost = float(world["infrastructure_failure"]), float(world["missingness"])
    observed = {
        (a["item"], a["level"], a["evaluand"], a["repetition"]): a
        for a in raw["observations"]["administrations"]
    }
    entries: dict[tuple[Any, ...], dict[str, Any]] = {}
    blocks = []
    for source in raw["task_blocks"]["administrations"]:
        key = (source["item"], source["level"], source["evaluand"], source["repetition"])
        adm = dict(source)
        if "columns" in adm:
            adm["columns"] = dict(adm["columns"] or {})
        blocks.append(adm)
        entry = observed.get(key)
        if entry is None:
            continue
        block = (*key[:3], (adm["repetition"] - 1) // n_design)
        if block not in block_effect:
            block_effect[block] = rng.normal(0, float(world["block_sd"]))
        u = rng.random()
        if u < failure + lost:
            entries[key] = missing(entry)
            if u < failure:
                _failed(adm)
            continue
        code = {n: 1.0 if adm["assignment"].get(n) == lv[1] else -1.0 for n, lv in factors.items()}
        sub = family_sub[family_of[adm["item"]]]
        mu = _mean(world, sub, contrasts, code, task_effect[adm["item"]] + block_effect[block])
        value: Any
        if kind in ("binary", "route"):
            value = bool(rng.random() < min(max(mu, 0.0), 1.0))
        else:
            value = mu + rng.normal(0, float(world["residual_sd"]))
            if kind in ("count", "column"):
                value = max(0, round(value))
        entry = {**entry, "status": "scored"}
        if kind in ("binary", "count", "number"):
            entry["final"] = {**(entry.get("final") or {}), endpoint: value}
        elif kind == "route":
            assert tools is not None  # _endpoint_kind checked it
            _set_tool_calls(adm, [tools[0] if value else tools[1]])
        else:
            _set_column(adm, endpoint, value)
        entries[key] = entry
    out = copy.copy(raw)
    out["task_blocks"] = {**raw["task_blocks"], "administrations": blocks}
    ordered = [
        entries.get((a["item"], a["level"], a["evaluand"], a["repetition"]), a)
        for a in raw["observations"]["administrations"]
    ]
    return with_observations(out, ordered)


def _set_tool_calls(adm: dict[str, Any], calls: list[str]) -> None:
    if "columns" in adm:
        adm["columns"]["tool_calls"] = calls
        return
    record = adm["record"]
    adm["record"] = {
        **record,
        "messages": [
            {"role": "assistant", "content": "", "tool_calls": [{"function": t} for t in calls]}
        ],
    }


def _set_column(adm: dict[str, Any], name: str, value: int) -> None:
    if "columns" in adm:
        adm["columns"][name] = value
        return
    raise PlanInputError(  # the gate's synthetic sessions are always stored columns
        f"administration of {adm['item']} has no stored session columns to simulate {name} in",
        where=f"endpoint {name}",
    )


def inquiry(raw: Raw, world: dict[str, Any], result: dict[str, Any]) -> list[Draw]:
    endpoint = _decision_endpoint(raw)
    draws = []
    for row in result.get("contrasts", []):
        name = _effect_name(row["sub_study"], row["contrast"])
        if row["endpoint"] != endpoint or name not in world:
            continue
        draws.append(
            Draw.from_interval(
                f"{row['sub_study']}_{row['contrast']} · {row['evaluand']}",
                row.get("estimate"),
                _interval(row),
                estimand=float(world[name]),
                above=0.0,
                below=0.0,
            )
        )
    return draws


# -- the size of the curve: rounds ------------------------------------------------------------


def rounds(raw: Raw) -> int:
    """The design's rounds: the most task blocks any task has per model."""
    n_design = _n_design(raw)
    return max(
        ((a["repetition"] - 1) // n_design + 1 for a in raw["task_blocks"]["administrations"]),
        default=0,
    )


def resize_rounds(raw: Raw, n: int) -> Raw:
    """The same design with ``n`` rounds of every task × model: fewer keep the first ``n``;
    more repeat the rounds in turn (round k copies round k mod R, its factor assignment and
    administrations). Positions are renumbered in schedule order. Raises ValueError for n < 1.
    """
    if n < 1:
        raise ValueError("rounds must be at least 1")
    n_design = _n_design(raw)
    have = rounds(raw)
    observed = {
        (a["item"], a["level"], a["evaluand"], a["repetition"]): a
        for a in raw["observations"]["administrations"]
    }
    blocks, entries = [], []
    for adm in raw["task_blocks"]["administrations"]:
        r, offset = divmod(adm["repetition"] - 1, n_design)
        for k in range(r, n, have):
            repetition = k * n_design + offset + 1
            blocks.append({**adm, "repetition": repetition})
            entry = observed.get((adm["item"], adm["level"], adm["evaluand"], adm["repetition"]))
            if entry is not None:
                entries.append({**entry, "repetition": repetition})
    entries.sort(key=lambda e: (e["evaluand"], e["item"], e["level"], e["repetition"]))
    for position, entry in enumerate(entries, start=1):
        entry["position"] = position
    out = copy.copy(raw)
    out["task_blocks"] = {**raw["task_blocks"], "administrations": blocks}
    return with_observations(out, entries)


def fast_parameters(parameters: dict[str, str]) -> dict[str, str]:
    """The plan's parameters with only the decision endpoint left among its endpoints (in the
    list it was in): the diagnosis reads nothing else, and each endpoint's contrasts draw from
    their own seed (``sub_seed(seed, kind, model, sub-study, endpoint)``), so the decision
    endpoint's estimates, intervals and decisions are those the whole plan computes, exactly
    (tests/analysis/test_diagnosis_route_choice.py); the controls, read apart, are kept."""
    decision = (parameters.get("decision_endpoint") or "").strip() or "authorised_route"
    primary = _list(parameters, "endpoints")
    secondary = _list(parameters, "secondary_endpoints")
    return {
        **parameters,
        "endpoints": json.dumps([e for e in primary if e == decision]),
        "secondary_endpoints": json.dumps(
            [e for e in secondary if e == decision and e not in primary]
        ),
    }


ROUNDS = SizeParameter("rounds", "rounds (task blocks per task and model)", rounds, resize_rounds)

WORLD = WorldModel(
    schema=schema,
    simulate=simulate,
    inquiry=inquiry,
    sizes=(ROUNDS,),
    fast_parameters=fast_parameters,
)
