"""CRUCIBLE's model of the world for its design diagnosis (issue #35 §1; seed 001).

The PI declares, in the study's own terms (seed 001, ``001_af2ffb5f61fcf54d.txt``):

- per evaluand × autonomy rung × graded axis, the **axis mean** (``mean:<evaluand>:<rung>:
  <axis>``, §6.1: what the family-clustered estimate of that cell estimates), on the axis' own
  scale: its rubric field's minimum to maximum, 0–1 where the field gives none; default the
  middle of that range (the seed gives no expected value);
- the **variance components** (§4, §9.1: seed variants are correlated observations nested
  within their scenario family): the SD of the family effects (``family_sd``: a family is
  harder or easier on an axis for every evaluand and rung), of the seed variants within a
  family (``seed_sd``) and of one episode around its seed (``episode_sd``: the harness grade's
  own noise, the machine score's error included);
- per evaluand × rung × hard-fail channel, the **hard-fail rate** (``hard_fail:<evaluand>:
  <rung>:<channel>``, §6.2), default 0;
- **missingness and infrastructure failure**: the share of administrations lost to the platform
  before the execution-evidence gate (``platform_loss``, §4: not model episodes), the share of
  eligible episodes whose axis has no grade (``axis_absence``, §9.3: measurement absence, never
  imputed), and the share of episodes that are incidents (``incident_rate``, §6.2 and §7: a
  containment breach, never pooled).

The data: episode j of seed s in family f, evaluand e at rung r, grades axis a as
``mean[e, r, a] + u[f, a] + v[s, a] + ε``, u ~ N(0, family_sd²), v ~ N(0, seed_sd²) (the same
for every evaluand and rung: the scenario's own difficulty), ε ~ N(0, episode_sd²); each
hard-fail channel fires with its declared rate. Grades are not clipped to the axis' range (the
seed says nothing of their distribution), so a mean near a bound with large SDs draws values
the harness could not give.

The inquiry, against what the world planted:

- each axis estimate (evaluand × rung × axis) against its declared mean, with the plan's
  interval (coverage; the calibrated bootstrap-t gives none below 10 families, nor the
  percentile CRUCIBLE §9.1 preregisters below 80, and the diagnosis shows how often a value
  has none), no test;
- each hard-fail rate against its declared rate, its "interval" [0, the one-sided
  Clopper–Pearson upper bound] the acceptance ceilings are judged on (§6.2, §6.3);
- each confirmatory comparison (§9.4) against the planted difference of means, its finding
  being the comparison's Holm- (or Bonferroni-) adjusted test rejecting at the plan's level;
- per acceptance policy × evaluand × rung (§6.3), whether the rung is accepted (1) or not (0)
  against whether it is acceptable in the world: every floor's axis mean at or above its
  minimum and every ceiling held by the planted rate (a rate ceiling: the rate at or below
  its maximum; a count ceiling: an expected count over the rung's administrations at or below
  its maximum, so a ceiling of 0 holds only for a rate of 0). Coverage requirements and
  incident ceilings are conditions on the data, not the world: the truth ignores them, and the
  diagnosis shows what they cost. The finding is the acceptance: its power is the chance the
  rung is accepted (for a rung that is not acceptable in the world, the chance of a false
  acceptance);
- per acceptance policy × evaluand, the maximum acceptable rung (its position on the ladder,
  0 the most restrictive, −1 "no acceptable rung observed") against the one the world's truth
  gives under the plan's ladder rule; its finding is drawing that true rung.

The fast path (issue #35 §4, docs/analysis.md): simulations use at most 999 bootstrap
replicates (the calibration suite measures the crucible intervals' coverage at 999,
``tests/calibration/designs.py``) and leave out the §9.2 hierarchical sensitivity models
(``compute(sensitivity=False)``), which no diagnosed estimate reads.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from apps.analysis.diagnosis.diagnosands import Draw
from apps.analysis.diagnosis.world import (
    Raw,
    SizeParameter,
    WorldModel,
    items_per_family,
    missing,
    number,
    rate,
    resize_items_per_family,
    with_observations,
    world_schema,
)
from apps.analysis.stats.acceptance import maximum_acceptable_rung

PLAN = "crucible_plan"  # the key ``prepare`` adds to the raw reads
FAST_REPLICATES = 999


def _listed(parameters: dict[str, str], name: str) -> Any:
    text = (parameters.get(name) or "").strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None  # the pipeline refuses it, naming the parameter


def prepare(version: Any, raw: Raw) -> Raw:
    """The raw reads with what the world reads of the plan and rubric: the graded axes and
    hard-fail channels (the plan's lists, or every number / binary field), each axis' range
    (its rubric field's minimum and maximum), the acceptance policies and the ladder rule."""
    from apps.analysis import inputs as data
    from apps.raters.models import RubricField

    parameters = data.plan_parameters(version)
    numbers = [f["name"] for f in raw["rubric_fields"] if f["kind"] == "number"]
    binaries = [f["name"] for f in raw["rubric_fields"] if f["kind"] == "binary"]
    bounds = {
        name: (low, high)
        for name, low, high in RubricField.objects.filter(
            version=version, name__in=numbers
        ).values_list("name", "minimum", "maximum")
    }
    axes = [a for a in (_listed(parameters, "axes") or numbers) if a in numbers]
    ranges = {}
    for axis in axes:
        low, high = bounds.get(axis, (None, None))
        ranges[axis] = [
            float(low) if low is not None else 0.0,
            float(high) if high is not None else 1.0,
        ]
    policies = _listed(parameters, "acceptance_policies")
    return {
        **raw,
        PLAN: {
            "axes": axes,
            "ranges": ranges,
            "channels": [c for c in (_listed(parameters, "hard_fail_channels") or binaries)],
            "policies": policies if isinstance(policies, list) else [],
            "ladder": (parameters.get("acceptance_ladder") or "").strip() or "contiguous",
        },
    }


def _plan(raw: Raw) -> dict[str, Any]:
    plan = raw.get(PLAN)
    if plan is None:  # raw reads not prepared (a test's): every number / binary field
        fields = raw["rubric_fields"]
        axes = [f["name"] for f in fields if f["kind"] == "number"]
        plan = {
            "axes": axes,
            "ranges": {a: [0.0, 1.0] for a in axes},
            "channels": [f["name"] for f in fields if f["kind"] == "binary"],
            "policies": [],
            "ladder": "contiguous",
        }
    return plan


def _evaluands(raw: Raw) -> list[str]:
    return sorted({e["evaluand"] for e in raw["observations"]["administrations"]})


def _rungs(raw: Raw) -> list[str]:
    return [lv["code"] for lv in sorted(raw["design"]["levels"], key=lambda lv: lv["ordinal"])]


def _mean_name(evaluand: str, rung: str, axis: str) -> str:
    return f"mean:{evaluand}:{rung}:{axis}"


def _fail_name(evaluand: str, rung: str, channel: str) -> str:
    return f"hard_fail:{evaluand}:{rung}:{channel}"


def schema(raw: Raw) -> dict[str, Any]:
    plan = _plan(raw)
    evaluands, rungs = _evaluands(raw), _rungs(raw)
    properties: dict[str, Any] = {}
    for evaluand in evaluands:
        for rung in rungs:
            for axis in plan["axes"]:
                low, high = plan["ranges"][axis]
                properties[_mean_name(evaluand, rung, axis)] = number(
                    f"{axis}, {evaluand} at {rung}",
                    f"The true mean of the graded axis {axis} for evaluand {evaluand} at "
                    f"autonomy rung {rung} (CRUCIBLE §6.1), on the axis' scale ({low:g} to "
                    f"{high:g}): what its family-clustered estimate estimates.",
                    (low + high) / 2,
                    low,
                    high,
                )
    for evaluand in evaluands:
        for rung in rungs:
            for channel in plan["channels"]:
                properties[_fail_name(evaluand, rung, channel)] = rate(
                    f"Hard-fail rate {channel}, {evaluand} at {rung}",
                    f"The chance an eligible episode of {evaluand} at {rung} fires the "
                    f"hard-fail channel {channel} (CRUCIBLE §6.2).",
                    0.0,
                )
    spread = max((high - low for low, high in plan["ranges"].values()), default=1.0)
    properties["family_sd"] = number(
        "Scenario-family SD",
        "How much scenario families differ on an axis (the SD of a family's effect, the same "
        "for every evaluand and rung: §4, §9.1's resampling cluster).",
        round(0.1 * spread, 6),
        0.0,
        spread,
    )
    properties["seed_sd"] = number(
        "Seed-variant SD",
        "How much seed variants of one family differ on an axis (nested within the family, §4).",
        round(0.05 * spread, 6),
        0.0,
        spread,
    )
    properties["episode_sd"] = number(
        "Episode SD",
        "The SD of one episode's grade around its seed variant's: the run's own variation and "
        "the harness grader's error.",
        round(0.05 * spread, 6),
        0.0,
        spread,
    )
    properties["platform_loss"] = rate(
        "Platform losses",
        "The share of administrations lost to the platform before the execution-evidence gate "
        "(§4): not model episodes, reported apart.",
        0.02,
        high=0.5,
    )
    properties["axis_absence"] = rate(
        "Axis not graded",
        "The share of eligible episodes in which an axis has no grade (§9.3): never imputed.",
        0.0,
        high=0.5,
    )
    properties["incident_rate"] = rate(
        "Incidents",
        "The share of episodes that are incidents (a containment breach, §6.2 and §7): "
        "never pooled into the eligible set.",
        0.0,
        high=0.5,
    )
    return world_schema(properties)


def simulate(raw: Raw, world: dict[str, Any], rng: np.random.Generator) -> Raw:
    plan = _plan(raw)
    axes, channels = plan["axes"], plan["channels"]
    code_of = {lv["ordinal"]: lv["code"] for lv in raw["design"]["levels"]}
    family_of = {i["code"]: i["family"] for i in raw["design"]["items"]}
    families = sorted(set(family_of.values()))
    family_effect = {
        (f, a): rng.normal(0, float(world["family_sd"])) for f in families for a in axes
    }
    seed_effect = {
        (s, a): rng.normal(0, float(world["seed_sd"])) for s in sorted(family_of) for a in axes
    }
    entries = []
    for entry in raw["observations"]["administrations"]:
        if rng.random() < float(world["platform_loss"]):
            lost = {k: v for k, v in missing(entry).items() if k != "attempt"}
            entries.append({**lost, "terminal_outcome": "platform_loss"})
            continue
        if rng.random() < float(world["incident_rate"]):
            entries.append(
                {
                    **entry,
                    "status": "excluded",
                    "reason_code": "containment_breach",
                    "final": {},
                    "scores": [],
                }
            )
            continue
        evaluand, rung = entry["evaluand"], code_of[entry["level"]]
        seed, family = entry["item"], family_of[entry["item"]]
        final: dict[str, Any] = {}
        for axis in axes:
            if rng.random() < float(world["axis_absence"]):
                continue
            final[axis] = float(
                world[_mean_name(evaluand, rung, axis)]
                + family_effect[(family, axis)]
                + seed_effect[(seed, axis)]
                + rng.normal(0, float(world["episode_sd"]))
            )
        for channel in channels:
            final[channel] = bool(rng.random() < float(world[_fail_name(evaluand, rung, channel)]))
        entries.append(
            {
                **entry,
                "status": "scored",
                "terminal_outcome": "completed",
                "final": final,
                "scores": [],
            }
        )
    return with_observations(raw, entries)


def _truly_acceptable(
    policy: dict[str, Any], world: dict[str, Any], evaluand: str, rung: str, episodes: int
) -> bool:
    """Whether ``rung`` is acceptable for ``evaluand`` in the world (module docstring)."""
    for floor in policy.get("floors") or []:
        mean = world.get(_mean_name(evaluand, rung, floor["axis"]))
        if mean is None or float(mean) < float(floor["minimum"]):
            return False
    for ceiling in policy.get("hard_fail_ceilings") or []:
        planted = float(world.get(_fail_name(evaluand, rung, ceiling["channel"]), 0.0))
        maximum = float(ceiling["maximum"])
        if ceiling.get("on", "count") == "rate":
            if planted > maximum:
                return False
        elif planted * episodes > maximum:
            return False
    return True


def inquiry(raw: Raw, world: dict[str, Any], result: dict[str, Any]) -> list[Draw]:
    plan = _plan(raw)
    draws = []
    for cell in result.get("axes", []):
        truth = world.get(_mean_name(cell["evaluand"], cell["rung"], cell["axis"]))
        draws.append(
            Draw.from_interval(
                f"{cell['axis']} · {cell['evaluand']} · {cell['rung']}",
                cell.get("estimate"),
                cell.get("interval"),
                estimand=None if truth is None else float(truth),
            )
        )
    for cell in result.get("hard_fails", []):
        truth = world.get(_fail_name(cell["evaluand"], cell["rung"], cell["channel"]))
        upper = cell.get("rate_upper_bound")
        draws.append(
            Draw(
                f"{cell['channel']} rate · {cell['evaluand']} · {cell['rung']}",
                cell.get("rate"),
                estimand=None if truth is None else float(truth),
                low=None if upper is None else 0.0,
                high=upper,
            )
        )
    for comparison in (result.get("comparisons") or {}).get("confirmatory", []):
        a, b = comparison["evaluands"]
        axis, rung = comparison["axis"], comparison["rung"]
        first, second = world.get(_mean_name(a, rung, axis)), world.get(_mean_name(b, rung, axis))
        draws.append(
            Draw.from_interval(
                f"{a} − {b} · {axis} · {rung} (confirmatory)",
                comparison.get("estimate"),
                comparison.get("interval"),
                estimand=None if first is None or second is None else float(first - second),
                significant=comparison.get("significant"),
            )
        )
    policies = {p.get("code"): p for p in plan["policies"] if isinstance(p, dict)}
    ladder = _rungs(raw)
    episodes: dict[tuple[str, str], int] = {}
    code_of = {lv["ordinal"]: lv["code"] for lv in raw["design"]["levels"]}
    for entry in raw["observations"]["administrations"]:
        key = (entry["evaluand"], code_of[entry["level"]])
        episodes[key] = episodes.get(key, 0) + 1
    for entry in result.get("acceptance", []):
        policy = policies.get(entry["policy"])
        if policy is None:
            continue
        evaluand = entry["evaluand"]
        truths = []
        for verdict in entry["rungs"]:
            rung = verdict["rung"]
            truth = _truly_acceptable(
                policy, world, evaluand, rung, episodes.get((evaluand, rung), 0)
            )
            truths.append({"rung": rung, "acceptable": truth})
            draws.append(
                Draw(
                    f"accepted · {entry['policy']} · {evaluand} · {rung}",
                    float(bool(verdict["acceptable"])),
                    estimand=float(truth),
                    significant=bool(verdict["acceptable"]),
                )
            )
        true_best = maximum_acceptable_rung(truths, rule=plan["ladder"])
        drawn = entry.get("maximum_acceptable_rung")
        position = float(ladder.index(drawn)) if drawn in ladder else -1.0
        true_position = float(ladder.index(true_best)) if true_best in ladder else -1.0
        draws.append(
            Draw(
                f"maximum acceptable rung · {entry['policy']} · {evaluand}",
                position,
                estimand=true_position,
                significant=position == true_position,
            )
        )
    return draws


def fast_parameters(parameters: dict[str, str]) -> dict[str, str]:
    """The plan's parameters with at most ``FAST_REPLICATES`` bootstrap replicates (the
    replicates the calibration suite measures the crucible intervals' coverage at)."""
    try:
        replicates = int(parameters.get("bootstrap_replicates") or 10_000)
    except ValueError:
        return dict(parameters)  # the pipeline refuses it, naming the parameter
    return {**parameters, "bootstrap_replicates": str(min(replicates, FAST_REPLICATES))}


SEEDS_PER_FAMILY = SizeParameter(
    "seeds_per_family", "seeds per family", items_per_family, resize_items_per_family
)

WORLD = WorldModel(
    schema=schema,
    simulate=simulate,
    inquiry=inquiry,
    sizes=(SEEDS_PER_FAMILY,),
    fast_parameters=fast_parameters,
    prepare=prepare,
    compute_options={"sensitivity": False},
)
