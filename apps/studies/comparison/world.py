"""The general comparison's model of the world for its design diagnosis (issue #35 §1).

Per rubric field the pipeline can compare (``assemble``'s: binary, categorical, ordinal, count
and number fields) and per condition of the design, the PI declares, the same for every model:

- a binary field's rate of yes (``rate:<field>:<condition>``); a categorical or ordinal
  field's share of each choice but the first (``rate:<field>=<choice>:<condition>``; the
  first choice takes the rest); a count or number field's mean (``mean:<field>:<condition>``)
  and its SD (``sd:<field>``, every condition alike);
- the item ICC (``item_icc``): the share of an outcome's variance that lies between items —
  a rate's items draw their shares from a Dirichlet (a beta for a binary field) around the
  declared ones with concentration (1 − ρ)/ρ, whose intra-class correlation is ρ (the
  Dirichlet-multinomial, Mosimann 1962, Biometrika 49:65); a mean's items a normal effect of
  variance ρ·SD², each response a normal residual of variance (1 − ρ)·SD² (a count rounded and
  floored at 0);
- the scorer's accuracy (``scorer_accuracy``: the judge's or reviewers' final value is the true
  one with this chance, else a guess among the field's values: the "knows or guesses" model,
  Gwet 2014, *Handbook of Inter-Rater Reliability*, §2.4), and the share of administrations
  with no response.

The inquiry: per model × outcome, each condition's rate or mean (its planted value, without a
test), and per comparison ``B vs A`` the difference B − A (its test: the interval excludes 0)
and, for rates, the ratio B / A (its test: the interval excludes 1), each against its planted
value. A scorer who guesses pulls the observed rates toward the guess: the diagnosis shows that
bias against the declared truth.

The size of the curve is the items per condition.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from apps.analysis.diagnosis.diagnosands import Draw
from apps.analysis.diagnosis.world import (
    Raw,
    SizeParameter,
    WorldError,
    WorldModel,
    items_per_group,
    missing,
    number,
    rate,
    resize_items_per_group,
    with_observations,
    world_schema,
)
from apps.studies.comparison.pipeline import MEAN_KINDS, RATE_KINDS

NULL_RATE = 0.3


def _fields(raw: Raw) -> list[dict[str, Any]]:
    """The fields the pipeline compares (as ``assemble`` keeps them)."""
    return [
        f
        for f in raw["rubric_fields"]
        if f["kind"] in RATE_KINDS + MEAN_KINDS
        and (f["kind"] == "binary" or f["kind"] in MEAN_KINDS or f["choices"])
    ]


def _conditions(raw: Raw) -> list[dict[str, Any]]:
    return list(raw["design"]["conditions"])


def _rate_name(field: str, condition: str, choice: Any = None) -> str:
    return f"rate:{field}:{condition}" if choice is None else f"rate:{field}={choice}:{condition}"


def _mean_name(field: str, condition: str) -> str:
    return f"mean:{field}:{condition}"


def schema(raw: Raw) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for field in _fields(raw):
        name, kind = field["name"], field["kind"]
        for condition in _conditions(raw):
            code, label = condition["code"], condition.get("name") or condition["code"]
            if kind == "binary":
                properties[_rate_name(name, code)] = rate(
                    f"{name} rate, {label}",
                    f"The true share of responses with {name} = yes in condition {code}, for "
                    "every model. Every condition alike (the default) is the null: declare the "
                    "difference you expect.",
                    NULL_RATE,
                )
            elif kind in RATE_KINDS:
                choices = list(field["choices"])
                for choice in choices[1:]:
                    properties[_rate_name(name, code, choice)] = rate(
                        f"{name} = {choice}, {label}",
                        f"The true share of responses with {name} = {choice} in condition "
                        f"{code}, for every model. The shares of {name}'s choices other than "
                        f"{choices[0]} add up to at most 1; {choices[0]} takes the rest.",
                        1 / len(choices),
                    )
            else:
                properties[_mean_name(name, code)] = number(
                    f"Mean {name}, {label}",
                    f"The true mean of {name} in condition {code}, for every model.",
                    1.0,
                    -1e9,
                    1e9,
                )
        if kind in MEAN_KINDS:
            properties[f"sd:{name}"] = number(
                f"SD of {name}",
                f"The SD of one response's {name} (items and responses together).",
                1.0,
                0.0,
                1e9,
            )
    properties["item_icc"] = rate(
        "Item ICC",
        "How much items differ: the share of an outcome's variance that lies between items "
        "(the intervals' clusters; 0: every item alike).",
        0.1,
        high=0.9,
    )
    properties["scorer_accuracy"] = rate(
        "Scorer accuracy",
        "The chance the final value (the judge's or the reviewers') is the true one; "
        "otherwise a guess among the field's values.",
        1.0,
    )
    properties["missingness"] = rate(
        "Missing responses",
        "The share of administrations with no response: left out of every outcome.",
        0.02,
        high=0.5,
    )
    return world_schema(properties)


def _values(field: dict[str, Any]) -> list[Any]:
    return [True, False] if field["kind"] == "binary" else list(field["choices"])


def _shares(field: dict[str, Any], condition: str, world: dict[str, Any]) -> np.ndarray:
    """The true shares of ``_values(field)`` in ``condition``. Raises WorldError when the
    declared shares add up to more than 1."""
    name = field["name"]
    if field["kind"] == "binary":
        p = float(world[_rate_name(name, condition)])
        return np.array([p, 1 - p])
    choices = list(field["choices"])
    rest = [float(world[_rate_name(name, condition, c)]) for c in choices[1:]]
    if sum(rest) > 1 + 1e-12:
        raise WorldError(
            f"the shares of {name}'s choices in condition {condition} add up to "
            f"{sum(rest):.3g}, above 1",
            where=_rate_name(name, condition, choices[1]),
        )
    return np.array([max(0.0, 1 - sum(rest)), *rest])


def simulate(raw: Raw, world: dict[str, Any], rng: np.random.Generator) -> Raw:
    fields = _fields(raw)
    items = {i["code"]: i for i in raw["design"]["items"]}
    icc = float(world["item_icc"])
    accuracy = float(world["scorer_accuracy"])
    # Each item's own shares (rates) or effect (means), drawn once per simulation.
    own: dict[tuple[str, str], Any] = {}
    for code in sorted(items):
        condition = items[code]["condition"] or ""
        for field in fields:
            if field["kind"] in MEAN_KINDS:
                sd = float(world[f"sd:{field['name']}"])
                own[(code, field["name"])] = rng.normal(0, sd * np.sqrt(icc))
                continue
            mean = _shares(field, condition, world)
            if icc <= 0:
                own[(code, field["name"])] = mean
                continue
            alive = mean > 0  # a zero share stays zero: the Dirichlet over the others
            drawn = np.zeros_like(mean)
            if alive.sum() == 1:
                drawn[alive] = 1.0
            else:
                drawn[alive] = rng.dirichlet(mean[alive] * (1 - icc) / icc)
            own[(code, field["name"])] = drawn
    entries = []
    for entry in raw["observations"]["administrations"]:
        if rng.random() < float(world["missingness"]):
            entries.append(missing(entry))
            continue
        condition = items[entry["item"]]["condition"] or ""
        final = dict(entry.get("final") or {})
        for field in fields:
            name = field["name"]
            if field["kind"] in MEAN_KINDS:
                sd = float(world[f"sd:{name}"])
                value = (
                    float(world[_mean_name(name, condition)])
                    + own[(entry["item"], name)]
                    + rng.normal(0, sd * np.sqrt(1 - icc))
                )
                final[name] = max(0, round(value)) if field["kind"] == "count" else value
                continue
            values = _values(field)
            p = own[(entry["item"], name)]
            truth = values[int(rng.choice(len(values), p=p / p.sum()))]
            if accuracy < 1 and rng.random() >= accuracy:
                truth = values[int(rng.integers(len(values)))]
            final[name] = truth
        entries.append({**entry, "status": "scored", "final": final})
    return with_observations(raw, entries)


def _truth(raw: Raw, world: dict[str, Any], outcome: dict[str, Any], condition: str) -> float:
    """The planted rate or mean of ``outcome`` (a row of the result's ``outcomes``)."""
    field = next(f for f in _fields(raw) if f["name"] == outcome["field"])
    if field["kind"] in MEAN_KINDS:
        return float(world[_mean_name(field["name"], condition)])
    shares = _shares(field, condition, world)
    values = _values(field)
    if outcome["name"].endswith(":rank"):  # an ordinal field's mean rank
        return float(sum((k + 1) * s for k, s in enumerate(shares)))
    event = True if outcome.get("event") is None else outcome["event"]
    return float(shares[values.index(event)])


def inquiry(raw: Raw, world: dict[str, Any], result: dict[str, Any]) -> list[Draw]:
    outcomes = {o["name"]: o for o in result.get("outcomes", [])}
    draws = []
    for row in result.get("levels", []):
        draws.append(
            Draw.from_interval(
                f"{row['outcome']} · {row['condition']} · {row['evaluand']}",
                row.get("estimate"),
                row.get("interval"),
                estimand=_truth(raw, world, outcomes[row["outcome"]], row["condition"]),
            )
        )
    for row in result.get("differences", []):
        outcome = outcomes[row["outcome"]]
        treated = _truth(raw, world, outcome, row["condition"])
        reference = _truth(raw, world, outcome, row["reference"])
        what = f"{row['outcome']}: {row['condition']} vs {row['reference']} · {row['evaluand']}"
        draws.append(_tested(f"difference {what}", row, treated - reference, null=0.0))
        ratio = row.get("ratio")
        if ratio is not None:
            planted = treated / reference if reference > 0 else None
            draws.append(_tested(f"ratio {what}", ratio, planted, null=1.0))
    return draws


def _tested(name: str, entry: dict[str, Any], truth: float | None, *, null: float) -> Draw:
    return Draw.from_interval(
        name, entry.get("estimate"), entry.get("interval"), estimand=truth, above=null, below=null
    )


def _condition(item: dict[str, Any]) -> str:
    return str(item["condition"] or "")


def items_per_condition(raw: Raw) -> int:
    """The design's items per condition (the largest condition's count)."""
    return items_per_group(raw, _condition)


def resize_items_per_condition(raw: Raw, n: int) -> Raw:
    """The same design with ``n`` items in every condition (``resize_items_per_group``)."""
    return resize_items_per_group(raw, n, _condition)


ITEMS_PER_CONDITION = SizeParameter(
    "items_per_condition", "items per condition", items_per_condition, resize_items_per_condition
)

WORLD = WorldModel(schema=schema, simulate=simulate, inquiry=inquiry, sizes=(ITEMS_PER_CONDITION,))
