"""Injection fidelity's model of the world for its design diagnosis (issue #35 §1; seed 003).

The PI declares, in seed 003's terms (``003_b819a89a4f74db5b.txt``, "Verdict" and "Drift
gate"):

- per evaluand (user-simulator) × axis A1–A5, the **pass rate** (``pass:<evaluand>:<axis>``):
  the chance the simulator truly enacts that axis of its card, so that the axis' observed band
  matches the expected one;
- per evaluand, the **drift rate** (``drift:<evaluand>``): the chance the second half of the
  pressure window truly collapses toward cooperation beyond the frozen ε (the drift gate);
- how much **cards** differ (``card_icc``): each card's pass rate on an axis is Beta around the
  evaluand's with concentration (1 − ρ)/ρ, so the share of the variance between cards is ρ
  (the beta-binomial's intra-class correlation; the pipeline clusters its intervals by card);
- the **judge's error rate** (``judge_error``): the chance the final verdict (the reviewers' or
  the LLM judge's) reads one axis' pass, or the drift flag, the wrong way;
- **missingness** (``missingness``): the share of dialogues with no verdict;
- the rates each finding is read against: ``fidelity_target`` and ``axis_target`` (a rate is
  found above its target when its interval's lower bound exceeds it) and ``drift_ceiling``
  (the drift rate is found below it when its interval's upper bound is below it).

The data: each dialogue's true pass on each axis and its true drift are drawn from its card's
rates; the verdict flips each with the judge's error; then, as seed 003's Verdict derives
them, ``fidelity`` = every axis passes and no drift, ``loss1`` = passes / 5. The signals
level (bands, the A1 mirror, ε) is upstream of the pipeline, in the raters' derivation, and is
not simulated: the world plants the verdicts that derivation yields.

The inquiry, per evaluand and (where the pipeline pools them) over all evaluands: the
fidelity rate against Π pass rates × (1 − drift rate) (the axes independent given the card),
each axis' pass rate against its declared rate, the drift rate against its declared rate, and
the mean loss1 against the mean of the pass rates. The estimands are the true rates, so a
judge's error shows as bias. Pooled truths weight the evaluands by their dialogues.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from apps.analysis.diagnosis.diagnosands import Draw
from apps.analysis.diagnosis.world import (
    Raw,
    SizeParameter,
    WorldModel,
    items_per_family,
    missing,
    rate,
    repetitions,
    resize_items_per_family,
    resize_repetitions,
    with_observations,
    world_schema,
)
from apps.studies.fidelity.pipeline import AXES

POOLED = "all evaluands"
# The verdict fields of the fidelity rubric preset (apps.studies.fidelity.rubric).
FIELDS = {"fidelity": "fidelity", "loss1": "loss1", "drift": "drift_flag"}


def _pass_name(evaluand: str, axis: str) -> str:
    return f"pass:{evaluand}:{axis}"


def _drift_name(evaluand: str) -> str:
    return f"drift:{evaluand}"


def _evaluands(raw: Raw) -> list[str]:
    return sorted({e["evaluand"] for e in raw["observations"]["administrations"]})


def schema(raw: Raw) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for evaluand in _evaluands(raw):
        for axis in AXES:
            properties[_pass_name(evaluand, axis)] = rate(
                f"{axis} pass rate, {evaluand}",
                f"The chance user-simulator {evaluand} truly enacts axis {axis} of its card "
                "(its observed band matches the expected one; seed 003, Verdict).",
                0.8,
            )
        properties[_drift_name(evaluand)] = rate(
            f"Drift rate, {evaluand}",
            f"The chance a dialogue of {evaluand} truly drifts toward cooperation in the second "
            "half of the pressure window beyond the frozen ε (seed 003, Drift gate).",
            0.05,
        )
    properties["card_icc"] = rate(
        "Card ICC",
        "How much PolicyCards differ: the share of an axis' pass variance that lies between "
        "cards (0: every card alike).",
        0.1,
        high=0.9,
    )
    properties["judge_error"] = rate(
        "Judge error rate",
        "The chance the final verdict (reviewers' or LLM judge's) reads one axis' pass, or the "
        "drift flag, the wrong way.",
        0.05,
        high=0.5,
    )
    properties["missingness"] = rate(
        "Missing verdicts",
        "The share of dialogues with no verdict (no response, infrastructure failure).",
        0.02,
        high=0.5,
    )
    properties["fidelity_target"] = rate(
        "Fidelity target",
        "The fidelity rate is found above this when its interval's lower bound exceeds it.",
        0.5,
    )
    properties["axis_target"] = rate(
        "Axis pass target",
        "An axis' pass rate is found above this when its interval's lower bound exceeds it.",
        0.7,
    )
    properties["drift_ceiling"] = rate(
        "Drift ceiling",
        "The drift rate is found below this when its interval's upper bound is below it.",
        0.1,
    )
    return world_schema(properties)


def _card_rate(mean: float, icc: float, rng: np.random.Generator) -> float:
    if icc <= 0 or mean <= 0 or mean >= 1:
        return mean
    concentration = (1 - icc) / icc
    return float(rng.beta(mean * concentration, (1 - mean) * concentration))


def simulate(raw: Raw, world: dict[str, Any], rng: np.random.Generator) -> Raw:
    icc, error = float(world["card_icc"]), float(world["judge_error"])
    cards: dict[tuple[str, int, str], dict[str, float]] = {}
    entries = []
    for entry in raw["observations"]["administrations"]:
        if rng.random() < float(world["missingness"]):
            entries.append(missing(entry))
            continue
        evaluand = entry["evaluand"]
        key = (entry["item"], entry["level"], evaluand)
        if key not in cards:
            cards[key] = {
                axis: _card_rate(float(world[_pass_name(evaluand, axis)]), icc, rng)
                for axis in AXES
            }
        passes = {}
        for axis in AXES:
            truth = bool(rng.random() < cards[key][axis])
            passes[axis] = truth != bool(rng.random() < error)
        drift = bool(rng.random() < float(world[_drift_name(evaluand)])) != bool(
            rng.random() < error
        )
        verdict = {
            **{f"{axis.lower()}_pass": passes[axis] for axis in AXES},
            FIELDS["drift"]: drift,
            FIELDS["fidelity"]: all(passes.values()) and not drift,
            FIELDS["loss1"]: round(sum(passes.values()) / len(AXES), 1),
        }
        entries.append(
            {
                **entry,
                "status": "scored",
                "final": {**entry["final"], **verdict},
                "scores": [],
            }
        )
    return with_observations(raw, entries)


def _truths(world: dict[str, Any], evaluand: str) -> dict[str, float]:
    passes = {axis: float(world[_pass_name(evaluand, axis)]) for axis in AXES}
    drift = float(world[_drift_name(evaluand)])
    return {
        **passes,
        "drift": drift,
        "fidelity": float(np.prod(list(passes.values()))) * (1 - drift),
        "loss1": float(np.mean(list(passes.values()))),
    }


def _rate_draw(
    name: str,
    part: dict[str, Any] | None,
    truth: float,
    *,
    above: float | None = None,
    below: float | None = None,
) -> Draw:
    part = part or {}
    return Draw.from_interval(
        name, part.get("rate"), part.get("interval"), estimand=truth, above=above, below=below
    )


def _rates(
    label: str, part: dict[str, Any], truth: dict[str, float], world: dict[str, Any]
) -> list[Draw]:
    draws = [
        _rate_draw(
            f"fidelity rate · {label}",
            part.get("fidelity"),
            truth["fidelity"],
            above=float(world["fidelity_target"]),
        )
    ]
    for axis in AXES:
        draws.append(
            _rate_draw(
                f"{axis} pass rate · {label}",
                (part.get("axes") or {}).get(axis),
                truth[axis],
                above=float(world["axis_target"]),
            )
        )
    draws.append(
        _rate_draw(
            f"drift rate · {label}",
            part.get("drift"),
            truth["drift"],
            below=float(world["drift_ceiling"]),
        )
    )
    return draws


def inquiry(raw: Raw, world: dict[str, Any], result: dict[str, Any]) -> list[Draw]:
    dialogues: dict[str, int] = {}
    for entry in raw["observations"]["administrations"]:
        dialogues[entry["evaluand"]] = dialogues.get(entry["evaluand"], 0) + 1
    truths = {e: _truths(world, e) for e in dialogues}
    total = sum(dialogues.values()) or 1
    pooled = {
        key: sum(truths[e][key] * n for e, n in dialogues.items()) / total
        for key in (*AXES, "drift", "fidelity", "loss1")
    }
    draws = []
    for evaluand, part in (result.get("by_evaluand") or {}).items():
        if evaluand in truths:
            draws += _rates(evaluand, part, truths[evaluand], world)
    if result.get("fidelity") is not None:
        draws += _rates(POOLED, result, pooled, world)
    mean = (result.get("loss1") or {}).get("mean")
    draws.append(Draw("mean loss1", mean, estimand=pooled["loss1"]))
    return draws


CARDS = SizeParameter("cards", "PolicyCards", items_per_family, resize_items_per_family)
DIALOGUES = SizeParameter(
    "dialogues_per_card", "dialogues per card and evaluand", repetitions, resize_repetitions
)

WORLD = WorldModel(schema=schema, simulate=simulate, inquiry=inquiry, sizes=(CARDS, DIALOGUES))
