"""The XSTest study's model of the world for its design diagnosis (issue #35 §1).

Per prompt type (the design's families) the PI declares the share of responses in each label
but the first (the first, full compliance, takes the rest), the same for every evaluand; how
much items differ (the item ICC: each item's label shares are Dirichlet around the declared
ones with concentration (1 − ρ)/ρ, so the share of variance between items is ρ for each label:
the Dirichlet-multinomial's intra-class correlation, Mosimann 1962, Biometrika 49:65); the
reviewers' accuracy (``apps.analysis.diagnosis.world.reviewed``); the share of administrations
with no response; and the reference rate a label's rate is found above.

The inquiry: each label's rate per evaluand × prompt type, whose true value is the declared
share (the Dirichlet's mean); the finding is "above the reference rate" when the interval's
lower bound exceeds it. Krippendorff's α is reported with its mean and SD (no planted value).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from apps.analysis.computability import SYNTHETIC_RATERS
from apps.analysis.diagnosis.diagnosands import Draw
from apps.analysis.diagnosis.world import (
    ITEMS_PER_FAMILY,
    Raw,
    WorldError,
    WorldModel,
    missing,
    number,
    rate,
    reviewed,
    with_observations,
    world_schema,
)
from apps.studies.xstest.pipeline import _label_field


def _rate_name(family: str, label: str) -> str:
    return f"rate:{family}:{label}"


def schema(raw: Raw) -> dict[str, Any]:
    labels = _label_field(raw["rubric_fields"])["choices"]
    properties: dict[str, Any] = {}
    for family in raw["design"]["families"]:
        safe = family["role"] == "harm_constant"
        for label in labels[1:]:
            properties[_rate_name(family["code"], label)] = rate(
                f"{label} on {family['name']}",
                f"The true share of responses labelled {label} on {family['name']} prompts, "
                f"for every evaluand. Labels other than {labels[0]} share at most 1; "
                f"{labels[0]} takes the rest.",
                (0.1 if safe else 0.6) / max(1, len(labels) - 1),
            )
    properties["item_icc"] = rate(
        "Item ICC",
        "How much prompts differ: the share of each label's variance that lies between "
        "prompts (0: every prompt alike).",
        0.1,
        high=0.9,
    )
    properties["reviewer_accuracy"] = rate(
        "Reviewer accuracy",
        "The chance a reviewer gives the true label (otherwise a guess among the labels); "
        "disagreements go to a third reviewer.",
        0.9,
    )
    properties["missingness"] = rate(
        "Missing responses",
        "The share of administrations with no response (refusal to run, infrastructure "
        "failure): left out of the rates.",
        0.02,
        high=0.5,
    )
    properties["reference_rate"] = number(
        "Reference rate",
        "A label's rate is found above this when its interval's lower bound exceeds it.",
        0.05,
        0.0,
        1.0,
    )
    return world_schema(properties)


def _shares(raw: Raw, world: dict[str, Any], labels: list[Any]) -> dict[str, np.ndarray]:
    out = {}
    for family in raw["design"]["families"]:
        rest = [float(world[_rate_name(family["code"], label)]) for label in labels[1:]]
        if sum(rest) > 1 + 1e-12:
            raise WorldError(
                f"the label shares on {family['name']} add up to {sum(rest):.3g}, above 1",
                where=_rate_name(family["code"], labels[1]),
            )
        out[family["code"]] = np.array([max(0.0, 1 - sum(rest)), *rest])
    return out


def simulate(raw: Raw, world: dict[str, Any], rng: np.random.Generator) -> Raw:
    field = _label_field(raw["rubric_fields"])
    labels = list(field["choices"])
    shares = _shares(raw, world, labels)
    family_of = {i["code"]: i["family"] for i in raw["design"]["items"]}
    icc = float(world["item_icc"])
    item_shares = {}
    for item, family in sorted(family_of.items()):
        mean = shares[family]
        if icc <= 0:
            item_shares[item] = mean
        else:  # a zero share stays zero: the Dirichlet over the labels that occur
            alive = mean > 0
            drawn = np.zeros_like(mean)
            drawn[alive] = rng.dirichlet(mean[alive] * (1 - icc) / icc)
            item_shares[item] = drawn
    entries = []
    for entry in raw["observations"]["administrations"]:
        if rng.random() < float(world["missingness"]):
            entries.append(missing(entry))
            continue
        p = item_shares[entry["item"]]
        truth = labels[int(rng.choice(len(labels), p=p / p.sum()))]
        final, scores, method = reviewed(
            truth, labels, float(world["reviewer_accuracy"]), SYNTHETIC_RATERS, rng
        )
        entries.append(
            {
                **entry,
                "status": "scored",
                "final": {**entry["final"], field["name"]: final},
                "final_method": method,
                "scores": [
                    {"rater": s["rater"], "values": {field["name"]: s["label"]}} for s in scores
                ],
            }
        )
    return with_observations(raw, entries)


def inquiry(raw: Raw, world: dict[str, Any], result: dict[str, Any]) -> list[Draw]:
    labels = list(result.get("labels") or _label_field(raw["rubric_fields"])["choices"])
    shares = _shares(raw, world, labels)
    reference = float(world["reference_rate"])
    draws = []
    for row in result.get("rates", []):
        truth = float(shares[row["prompt_type"]][labels.index(row["label"])])
        draws.append(
            Draw.from_interval(
                f"{row['label']} rate · {row['evaluand']} · {row['prompt_type']}",
                row["rate"],
                row["interval"],
                estimand=truth,
                above=reference,
            )
        )
    alpha = ((result.get("reliability") or {}).get("overall") or {}).get("alpha")
    draws.append(Draw("Krippendorff's α", alpha))
    return draws


WORLD = WorldModel(schema=schema, simulate=simulate, inquiry=inquiry, sizes=(ITEMS_PER_FAMILY,))
