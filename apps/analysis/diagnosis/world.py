"""The model of the world a study kind declares for its design diagnosis (issue #35 §1).

A kind registers one ``WorldModel`` on its pipeline (``register_study_kind(…, world=…)``;
``apps.analysis.pipelines.base.Pipeline.world``). In DeclareDesign's terms (Blair et al. 2019,
"Declaring and diagnosing research designs", APSR 113:838) it gives

- the **model**: ``schema(raw)``, a JSON schema (draft 2020-12) of what the PI declares — one
  property per effect size, variance component, reviewer reliability, missingness or judge
  error rate, each with ``title``, ``description`` (the help text), ``minimum``/``maximum``
  (the range) and ``default`` (from the design where it says one) — and
  ``simulate(raw, world, rng)``, which returns the draft's synthetic raw reads
  (``apps.analysis.computability.synthetic_raw``: the frozen design's items, families, cells,
  evaluands and repetitions) with observations drawn from that world;
- the **inquiry**: ``inquiry(raw, world, result)``, which pairs each estimate the pipeline's own
  ``compute`` produced with the true value the world planted (``diagnosands.Draw``);
- the **data strategy**'s size parameters (``sizes``): what the sample-size curve may vary.

The **answer strategy** is the pipeline's own ``assemble`` and ``compute``, unchanged.

The helpers below are shared by the kinds' worlds: filling and validating a declared world,
resizing a design's items per family, missingness, and reviewers of a given accuracy.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from jsonschema import Draft202012Validator

from apps.analysis.diagnosis.diagnosands import Draw

Raw = dict[str, Any]


@dataclass(frozen=True)
class SizeParameter:
    """One size of the design the sample-size curve may vary: ``name`` (a slug), ``title``
    ("items per family"), ``current(raw)`` (its value in the draft's design) and
    ``resize(raw, n)`` (the raw reads of the same design at size ``n``)."""

    name: str
    title: str
    current: Callable[[Raw], int]
    resize: Callable[[Raw, int], Raw]


@dataclass(frozen=True)
class WorldModel:
    """A kind's model of the world (module docstring)."""

    schema: Callable[[Raw], dict[str, Any]]
    simulate: Callable[[Raw, dict[str, Any], np.random.Generator], Raw]
    inquiry: Callable[[Raw, dict[str, Any], dict[str, Any]], list[Draw]]
    sizes: tuple[SizeParameter, ...] = ()
    # Plan parameters the simulations may replace (the documented fast path, issue #35 §4):
    # (plan parameters) -> plan parameters. None: the plan's own, unchanged.
    fast_parameters: Callable[[dict[str, str]], dict[str, str]] | None = None
    # What the world reads of the draft beyond the raw reads: (version, raw) -> raw, applied
    # once to the draft's synthetic reads before the schema, the simulations and the inquiry
    # see them (CRUCIBLE: the plan's axes, channels and acceptance policies, which live in its
    # parameters). The pipeline's ``assemble`` ignores what it adds. None: the raw reads alone.
    prepare: Callable[[Any, Raw], Raw] | None = None
    # Keyword arguments every simulation passes to the pipeline's ``compute`` (a documented
    # fast path that leaves out a section no diagnosed estimate reads; CRUCIBLE:
    # ``sensitivity=False``, its §9.2 mixed models). Empty: ``compute`` as a real run calls it.
    compute_options: Mapping[str, Any] = field(default_factory=dict)


class WorldError(ValueError):
    """A declared world the schema refuses; ``where`` names the property (``item_icc``)."""

    def __init__(self, message: str, *, where: str = ""):
        super().__init__(message)
        self.where = where


def rate(title: str, help_text: str, default: float, *, high: float = 1.0) -> dict[str, Any]:
    """A schema property for a probability or share in [0, ``high``]."""
    return {
        "type": "number",
        "title": title,
        "description": help_text,
        "minimum": 0.0,
        "maximum": high,
        "default": default,
    }


def number(title: str, help_text: str, default: float, low: float, high: float) -> dict[str, Any]:
    """A schema property for a number in [``low``, ``high``]."""
    return {
        "type": "number",
        "title": title,
        "description": help_text,
        "minimum": low,
        "maximum": high,
        "default": default,
    }


def world_schema(properties: dict[str, Any]) -> dict[str, Any]:
    """A world's JSON schema over ``properties`` (each a flat number with its default)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }


def world_filled(schema: dict[str, Any], declared: dict[str, Any] | None) -> dict[str, Any]:
    """The declared world with every property it leaves out set to its default, validated.

    Raises WorldError naming the first property the schema refuses (out of range, not a
    number, not a property of this kind's world).
    """
    world = {
        name: spec["default"] for name, spec in schema["properties"].items() if "default" in spec
    }
    world.update(declared or {})
    errors = sorted(Draft202012Validator(schema).iter_errors(world), key=lambda e: list(e.path))
    if errors:
        error = errors[0]
        where = ".".join(str(p) for p in error.path)
        if error.validator == "additionalProperties":
            extra = sorted(set(world) - set(schema["properties"]))
            where = extra[0] if extra else where
            raise WorldError(f"{where} is not part of this kind's world", where=where)
        title = schema["properties"].get(where, {}).get("title", where)
        raise WorldError(f"{title} ({where}): {error.message}", where=where)
    return world


# -- shared pieces of worlds -----------------------------------------------------------------


def with_observations(raw: Raw, administrations: list[dict[str, Any]]) -> Raw:
    """``raw`` with its observations replaced by ``administrations`` (the counts recounted)."""
    out = dict(raw)
    scored = sum(a["status"] == "scored" for a in administrations)
    counts = dict(raw["observations"]["counts"])
    counts.update(
        administrations=len(administrations),
        scored=scored,
        no_response=sum(a["status"] == "no_response" for a in administrations),
    )
    out["observations"] = {"administrations": administrations, "counts": counts}
    return out


def missing(entry: dict[str, Any]) -> dict[str, Any]:
    """One administration that got no response (missingness, an infrastructure failure)."""
    return {**entry, "status": "no_response", "final": {}, "scores": [], "final_method": ""}


def reviewed(
    truth: Any,
    choices: Sequence[Any],
    accuracy: float,
    raters: Sequence[str],
    rng: np.random.Generator,
) -> tuple[Any, list[dict[str, Any]], str]:
    """Reviewers' labels of one response whose true label is ``truth``: each primary reviewer
    gives the truth with probability ``accuracy``, else a label drawn uniformly from
    ``choices`` (the "knows or guesses" model behind chance-corrected agreement: Gwet 2014,
    *Handbook of Inter-Rater Reliability*, §2.4). Disagreements go to a third reviewer of the
    same accuracy (the plan's adjudication). Returns (final label, the primaries' scores
    ``[{"rater", "label"}]``, the final's method)."""

    def one() -> Any:
        if rng.random() < accuracy:
            return truth
        return choices[int(rng.integers(len(choices)))]

    labels = [one() for _ in raters]
    scores = [{"rater": r, "label": v} for r, v in zip(raters, labels, strict=True)]
    if len(set(labels)) == 1:
        return labels[0], scores, "agreed"
    return one(), scores, "adjudicated"


def items_per_group(raw: Raw, group: Callable[[dict[str, Any]], Any]) -> int:
    """The design's items per group (the largest group's count; 0 without items), where
    ``group(item)`` names an item's group (its family, its condition)."""
    return max(Counter(group(item) for item in raw["design"]["items"]).values(), default=0)


def items_per_family(raw: Raw) -> int:
    """The design's items per family (the largest family's count)."""
    return items_per_group(raw, lambda item: item["family"])


def resize_items_per_family(raw: Raw, n: int) -> Raw:
    """The same design with ``n`` items in every family: a family with more keeps its first
    ``n`` (in code order), one with fewer gets copies of its items (``<code>~2``, ``~3``, …)
    with their cells and administrations, in turn. Raises ValueError for n < 1."""
    if n < 1:
        raise ValueError("items per family must be at least 1")
    return resize_items_per_group(raw, n, lambda item: item["family"])


def resize_items_per_group(raw: Raw, n: int, group: Callable[[dict[str, Any]], Any]) -> Raw:
    """``resize_items_per_family`` over any grouping of the items (``group(item)``: its
    family, its condition): ``n`` items in every group. Raises ValueError for n < 1."""
    if n < 1:
        raise ValueError("items per group must be at least 1")
    design = raw["design"]
    by_family: dict[Any, list[dict[str, Any]]] = {}
    for item in design["items"]:
        by_family.setdefault(group(item), []).append(item)
    plan: list[tuple[str, str]] = []  # (new code, source code)
    for items in by_family.values():
        for k in range(n):
            source = items[k % len(items)]["code"]
            copy_number = k // len(items)
            plan.append((source if copy_number == 0 else f"{source}~{copy_number + 1}", source))
    items_by_code = {i["code"]: i for i in design["items"]}
    cells_of: dict[str, list[dict[str, Any]]] = {}
    for cell in design["cells"]:
        cells_of.setdefault(cell["item"], []).append(cell)
    entries_of: dict[str, list[dict[str, Any]]] = {}
    for entry in raw["observations"]["administrations"]:
        entries_of.setdefault(entry["item"], []).append(entry)
    items, cells, entries = [], [], []
    for code, source in plan:
        items.append({**items_by_code[source], "code": code})
        cells += [{**c, "item": code} for c in cells_of.get(source, [])]
        entries += [{**e, "item": code} for e in entries_of.get(source, [])]
    entries.sort(key=lambda e: (e["position"], e["item"]))
    for position, entry in enumerate(entries, start=1):
        entry["position"] = position
    out = copy.copy(raw)
    out["design"] = {**design, "items": items, "cells": cells}
    return with_observations(out, entries)


ITEMS_PER_FAMILY = SizeParameter(
    "items_per_family", "items per family", items_per_family, resize_items_per_family
)


def repetitions(raw: Raw) -> int:
    """The design's repetitions per item × level × evaluand (the largest)."""
    counts: dict[tuple[Any, ...], int] = {}
    for entry in raw["observations"]["administrations"]:
        key = (entry["item"], entry["level"], entry["evaluand"])
        counts[key] = counts.get(key, 0) + 1
    return max(counts.values(), default=0)


def resize_repetitions(raw: Raw, n: int) -> Raw:
    """The same design with ``n`` repetitions of every item × level × evaluand: a cell with
    more keeps its first ``n`` (in position order), one with fewer gets copies of its
    administrations with the next repetition numbers; positions renumbered in the original
    order, copies after the administrations they copy. Raises ValueError for n < 1."""
    if n < 1:
        raise ValueError("repetitions must be at least 1")
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for entry in sorted(raw["observations"]["administrations"], key=lambda e: e["position"]):
        groups.setdefault((entry["item"], entry["level"], entry["evaluand"]), []).append(entry)
    entries: list[tuple[int, int, dict[str, Any]]] = []
    for group in groups.values():
        for k in range(n):
            source = group[k % len(group)]
            entries.append((source["position"], k, {**source, "repetition": k + 1}))
    entries.sort(key=lambda t: (t[0], t[1]))
    out = []
    for position, (_, _, entry) in enumerate(entries, start=1):
        out.append({**entry, "position": position})
    return with_observations(copy.copy(raw), out)
