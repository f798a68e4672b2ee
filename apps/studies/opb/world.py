"""OPB-01's model of the world for its design diagnosis (issue #35 §1).

The PI declares, on the logit scale of the plan (the unit of ε):

- per family, its slope of F_att per level (``slope:<family>``): β_A for Family A
  (harm-constant), β_B for Family B (discrimination control), and the disclosure and force
  families' own; and the mean F_att at L0 (``baseline_f_att``), the same for every family;
- the variance components: the SD of the items' intercepts and of their slopes (logit scale;
  v1.1's calibration used an item-slope SD of 0.25);
- the share of responses that are refusals (R), the chance a reviewer mis-ticks one key unit
  (reviewer reliability: disagreements go to a third reviewer), and the share of
  administrations with no response.

The data: for item i of family f at level L, each of the cell's key units is supplied with
probability 1 − μ, logit μ = logit(baseline) + (β_f + v_i)·L + u_i, u_i ~ N(0, item_sd²),
v_i ~ N(0, item_slope_sd²); so F_att = 1 − supplied / required has mean μ given the item. The
inquiry: β_A, β_B, their difference β_LF = β_A − β_B, and β_force, each with its planted value
(the conditional slope; with item intercepts the pipeline's population-averaged beta
regression is attenuated toward 0, Zeger, Liang and Albert 1988, Biometrics 44:1049 — the
diagnosis shows that bias rather than hiding it). An estimate's test is its interval excluding
0; the §8 decision table's findings are counted from its own decision stage.

Under a null (β_f = 0, item slope SD 0) the world's mean F_att is the same at every level,
whatever the number of key units a level's cells hold: each unit is withheld with probability
μ, so E[F_att | item] = μ (measured: 0.1994, 0.2003, 0.1998, 0.1995 at L0–L3, MC SE 0.0013);
refusals (R) do not enter F_att. The pipeline's β of such a null is nevertheless biased upward
when a family's keys hold more units at higher levels (OPB-01's Family A: 3 at L0, 4–5 at L3):
beta regression fitted to the squeezed shares k/K, whose exact 0s are commoner with fewer
units, is misspecified for them (+0.058 in the 2-repetition diagnosis of
``tests/analysis/test_diagnosis_opb.py``; none with equal keys). That bias belongs to the
preregistered estimator, not to this world, and the diagnosis shows it: docs/analysis.md,
"β of F_att under a null".
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit, logit

from apps.analysis.computability import SYNTHETIC_RATERS
from apps.analysis.diagnosis.diagnosands import Draw
from apps.analysis.diagnosis.world import (
    ITEMS_PER_FAMILY,
    Raw,
    WorldModel,
    missing,
    number,
    rate,
    with_observations,
    world_schema,
)
from apps.studies.opb.pipeline import ARM_OF_ROLE, _field

ESTIMATE_OF_ARM = {"A": "beta_A", "B": "beta_B", "force": "beta_force"}
DEFAULT_SLOPE = {"discrimination_control": 0.3}


def _slope_name(family: str) -> str:
    return f"slope:{family}"


def schema(raw: Raw) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for family in raw["design"]["families"]:
        arm = ARM_OF_ROLE.get(family["role"], family["code"])
        properties[_slope_name(family["code"])] = number(
            f"Slope of F_att, Family {family['code']} (β_{arm})",
            f"How much F_att's logit rises per level in Family {family['code']} "
            f"({family['role'].replace('_', ' ')}); 0: no change with level.",
            DEFAULT_SLOPE.get(family["role"], 0.0),
            -3.0,
            3.0,
        )
    properties["baseline_f_att"] = rate(
        "Mean F_att at L0", "The share of key units withheld at the lowest level.", 0.2
    )
    properties["item_sd"] = number(
        "Item intercept SD", "How much items differ in F_att's logit at L0.", 0.5, 0.0, 3.0
    )
    properties["item_slope_sd"] = number(
        "Item slope SD", "How much items' slopes differ (logit per level).", 0.25, 0.0, 2.0
    )
    properties["refusal_rate"] = rate("Refusal rate R", "The share of responses refused.", 0.1)
    properties["unit_error"] = rate(
        "Reviewer unit error",
        "The chance a reviewer mis-ticks one key unit (supplied for withheld or the reverse); "
        "disagreements go to a third reviewer.",
        0.03,
        high=0.5,
    )
    properties["missingness"] = rate(
        "Missing responses", "The share of administrations with no response.", 0.02, high=0.5
    )
    return world_schema(properties)


def simulate(raw: Raw, world: dict[str, Any], rng: np.random.Generator) -> Raw:
    fields = raw["rubric_fields"]
    checklist = _field(fields, "units_supplied", kind="checklist")
    refusal = _field(fields, "refusal", "R")
    family_of = {i["code"]: i["family"] for i in raw["design"]["items"]}
    units_of = {(c["item"], c["level"]): c["key_units"] for c in raw["design"]["cells"]}
    base = float(logit(min(max(float(world["baseline_f_att"]), 1e-6), 1 - 1e-6)))
    effects = {
        item: (
            rng.normal(0, float(world["item_sd"])),
            rng.normal(0, float(world["item_slope_sd"])),
        )
        for item in sorted(family_of)
    }
    error = float(world["unit_error"])
    entries = []
    for entry in raw["observations"]["administrations"]:
        if rng.random() < float(world["missingness"]):
            entries.append(missing(entry))
            continue
        intercept, slope = effects[entry["item"]]
        level = entry["level"]
        beta = float(world[_slope_name(family_of[entry["item"]])])
        mu = float(expit(base + intercept + (beta + slope) * level))
        positions = [u["position"] for u in units_of[(entry["item"], level)]]
        truth = rng.random(len(positions)) >= mu  # supplied with probability 1 − μ

        def reviewer(truth: np.ndarray = truth, positions: list[int] = positions) -> list[int]:
            flips = rng.random(len(positions)) < error
            return [p for p, on in zip(positions, truth ^ flips, strict=True) if on]

        first, second = reviewer(), reviewer()
        final, method = (first, "agreed") if first == second else (reviewer(), "adjudicated")
        refused = bool(rng.random() < float(world["refusal_rate"]))
        values = {**({refusal: refused} if refusal else {})}

        def scored(ticks: list[int], values: dict[str, Any] = values) -> dict[str, Any]:
            return {**values, **({checklist: ticks} if checklist else {})}

        entries.append(
            {
                **entry,
                "status": "scored",
                "final": {**entry["final"], **scored(final)},
                "final_method": method,
                "scores": [
                    {"rater": r, "values": scored(t)}
                    for r, t in zip(SYNTHETIC_RATERS, (first, second), strict=True)
                ],
            }
        )
    return with_observations(raw, entries)


def inquiry(raw: Raw, world: dict[str, Any], result: dict[str, Any]) -> list[Draw]:
    truth: dict[str, float] = {}
    for family in raw["design"]["families"]:
        estimate = ESTIMATE_OF_ARM.get(ARM_OF_ROLE.get(family["role"], ""))
        if estimate is not None:
            truth.setdefault(estimate, float(world[_slope_name(family["code"])]))
    if "beta_A" in truth and "beta_B" in truth:
        truth["beta_LF"] = truth["beta_A"] - truth["beta_B"]
    draws = []
    for surface in result.get("surfaces", []):
        found: dict[str, dict[str, Any]] = {}
        for stage in surface["stages"]:
            for key in truth:
                if isinstance(stage.get(key), dict):
                    found[key] = stage[key]
        for key, value in truth.items():
            drawn = found.get(key) or {}
            draws.append(
                Draw.from_interval(
                    f"{key} · {surface['evaluand']}",
                    drawn.get("estimate"),
                    drawn.get("interval"),
                    estimand=value,
                    above=0.0,
                    below=0.0,
                )
            )
    return draws


WORLD = WorldModel(
    schema=schema,
    simulate=simulate,
    inquiry=inquiry,
    sizes=(ITEMS_PER_FAMILY,),
    # The refusal models feed no diagnosed estimate, test or decision (pipeline.compute).
    compute_options={"refusal_models": False},
)
