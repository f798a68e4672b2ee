"""The design diagnosis of a draft (issue #35 §2–3): its kind's world simulated through the
plan's own pipeline.

From the draft's own design (``apps.analysis.computability.synthetic_raw``, the whole design:
its items, families, cells, evaluands and repetitions, no sample) each simulation draws the
observations from the declared world (``WorldModel.simulate``), runs the pipeline exactly as a
real run does (``assemble``, the canonical JSON round trip of the inputs, ``compute`` with the
plan's parameters and a seed drawn from the simulation's own stream), and reads each estimate
against its planted value (``WorldModel.inquiry``) and each decision stage's answer (the
report headline's reading: ``apps.analysis.headline.decision_stages``). ``diagnosands``
summarises them.

A sample-size curve repeats this at each value of one size parameter (``SizeParameter``).
The result is a plain dict, encoded as canonical JSON by the caller: the same draft, world,
seed and sizes give the same bytes.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from apps.analysis import inputs as data
from apps.analysis.computability import synthetic_raw
from apps.analysis.diagnosis.diagnosands import (
    DIAGNOSAND_TITLES,
    Simulation,
    Stage,
    diagnosands,
    simulate,
)
from apps.analysis.diagnosis.world import SizeParameter, WorldError, WorldModel, world_filled
from apps.analysis.headline import decision_stages
from apps.analysis.pipelines import get_pipeline
from apps.analysis.pipelines.base import Pipeline, PlanInputError, software_versions
from apps.core.canonical import canonical_json
from apps.protocols.models import ProtocolVersion
from apps.protocols.plans import version_pipeline

DOCUMENT_TYPE = "preregistry/design-diagnosis/1"
MAX_SIMS = 5_000
MAX_SIZES = 8
POWER_TARGET = 0.8
COVERAGE_FLOOR = 0.93
# A bias beyond this many Monte Carlo SEs is reported: an unbiased estimator is flagged by
# chance in about 0.3 % of estimates (a normal's two-sided tail beyond 3 SD).
BIAS_MC_SE = 3.0


class DiagnosisUnavailable(ValueError):
    """The draft's plan cannot be diagnosed (no pipeline, or its kind declares no world)."""


def version_world(version: ProtocolVersion) -> tuple[Pipeline, WorldModel]:
    """The pipeline of ``version``'s plan and its kind's world.

    Raises DiagnosisUnavailable when the plan names no pipeline or the kind declares none.
    """
    kind = version_pipeline(version)
    try:
        pipeline = get_pipeline(kind or "")
    except KeyError:
        raise DiagnosisUnavailable("the plan names no analysis pipeline") from None
    if pipeline.world is None or pipeline.assemble is None:
        raise DiagnosisUnavailable(
            f"the {pipeline.kind} pipeline declares no model of the world to diagnose"
        )
    return pipeline, pipeline.world


def base_raw(version: ProtocolVersion, pipeline: Pipeline) -> dict[str, Any]:
    """The draft's whole design as raw reads, with the computability gate's synthetic
    observations (which each simulation replaces). Raises PlanInputError as the gate does."""
    synthetic = synthetic_raw(version, budget=10**9)
    raw = synthetic.raw
    if pipeline.synthetic is not None:
        raw = pipeline.synthetic(version, raw)
    if pipeline.world is not None and pipeline.world.prepare is not None:
        raw = pipeline.world.prepare(version, raw)
    if not synthetic.administrations:
        raise PlanInputError("the schedule would hold no administration to simulate")
    return raw


def world_schema_of(version: ProtocolVersion) -> dict[str, Any]:
    """The JSON schema of ``version``'s world, defaults from its design (for the form)."""
    pipeline, model = version_world(version)
    return model.schema(base_raw(version, pipeline))


def size_parameter(model: WorldModel, name: str) -> SizeParameter:
    for size in model.sizes:
        if size.name == name:
            return size
    known = ", ".join(s.name for s in model.sizes) or "none"
    raise WorldError(f"{name!r} is not a size of this design (its sizes: {known})", where="size")


def diagnose_version(
    *,
    version: ProtocolVersion,
    world: dict[str, Any] | None,
    sims: int,
    seed: int,
    size: str = "",
    values: Sequence[int] = (),
    progress: Callable[[int, str], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """The design diagnosis of ``version`` (module docstring) as a document:

    ``{"document", "kind", "world", "seed", "sims", "size": {"name", "title", "values"} | None,
    "points": [{"size", "administrations", "estimates", "stages", "sims", "bootstrap_sims"}],
    "warnings": [...], "parameters", "software"}`` — one point per size value (one point, the
    draft's own size, without a curve).

    Raises DiagnosisUnavailable, WorldError (a declared value out of its range, naming it),
    PlanInputError (the design cannot be simulated) and DiagnosisCancelled.
    """
    if not 1 <= sims <= MAX_SIMS:
        raise WorldError(f"simulations must be from 1 to {MAX_SIMS}", where="sims")
    pipeline, model = version_world(version)
    raw = base_raw(version, pipeline)
    filled = world_filled(model.schema(raw), world)
    parameters = data.plan_parameters(version)
    if model.fast_parameters is not None:
        parameters = model.fast_parameters(parameters)
    points_raw: list[tuple[int | None, dict[str, Any]]] = [(None, raw)]
    size_doc = None
    if size:
        chosen = size_parameter(model, size)
        wanted = sorted(set(int(v) for v in values))
        if not wanted or len(wanted) > MAX_SIZES or wanted[0] < 1:
            raise WorldError(
                f"give 1 to {MAX_SIZES} sizes, each at least 1, for the curve", where="values"
            )
        points_raw = [(v, chosen.resize(raw, v)) for v in wanted]
        size_doc = {
            "name": chosen.name,
            "title": chosen.title,
            "values": wanted,
            "draft": chosen.current(raw),
        }
    total = sims * len(points_raw)
    points = []
    for p, (value, point_raw) in enumerate(points_raw):

        def step(percent: int, message: str, p: int = p, value: int | None = value) -> None:
            if progress is not None:
                at = f" at {size_doc['title']} = {value}" if size_doc else ""
                progress(int((p * sims + percent * sims / 100) * 100 / total), f"{message}{at}")

        # The objects alive before the loop (the process' modules, the draft's design) are
        # moved out of the collector's reach while it runs: a library that calls gc.collect()
        # (statsmodels' Holm adjustment does, once per call) would otherwise walk the whole
        # heap once per simulation (0.5 s each in a test process). Results are unchanged.
        gc.freeze()
        try:
            runs = simulate(
                _one(version, pipeline, model, point_raw, filled, parameters),
                sims=sims,
                seed=int(np.random.SeedSequence([seed, p]).generate_state(1)[0]),
                progress=step,
                cancelled=cancelled,
            )
        finally:
            gc.unfreeze()
        summary = diagnosands(runs, seed=seed)
        points.append(
            {
                "size": value,
                "administrations": len(point_raw["observations"]["administrations"]),
                **summary,
            }
        )
    return {
        "document": DOCUMENT_TYPE,
        "kind": pipeline.kind,
        "world": filled,
        "seed": seed,
        "sims": sims,
        "size": size_doc,
        "points": points,
        "warnings": diagnosis_warnings(points[0]),
        # In the table's order (a list: the canonical encoding sorts an object's keys).
        "diagnosands": [[name, title] for name, title in DIAGNOSAND_TITLES.items()],
        "parameters": parameters,
        "software": software_versions(),
    }


def _one(
    version: ProtocolVersion,
    pipeline: Pipeline,
    model: WorldModel,
    raw: dict[str, Any],
    world: dict[str, Any],
    parameters: dict[str, str],
) -> Callable[[np.random.Generator, int], Simulation]:
    assemble = pipeline.assemble
    assert assemble is not None  # version_world checked it

    def run_once(rng: np.random.Generator, i: int) -> Simulation:
        simulated = model.simulate(raw, world, rng)
        inputs = json.loads(canonical_json(assemble(simulated)))
        result = pipeline.compute(
            inputs,
            parameters=parameters,
            seed=int(rng.integers(2**62)),
            progress=lambda percent, message: None,
            **model.compute_options,
        )
        stages = [
            Stage(
                s["where"],
                tuple(str(f) for f in s["findings"]),
                bool(s["evaluated"]),
                bool(s["contradictions"]),
            )
            for s in decision_stages(result)
        ]
        return Simulation(draws=model.inquiry(simulated, world, result), stages=stages)

    return run_once


def diagnosis_warnings(point: dict[str, Any]) -> list[str]:
    """Plain-word warnings on one point of a diagnosis (issue #35 §6): a finding or test whose
    power is below ``POWER_TARGET``, an interval whose coverage is below ``COVERAGE_FLOOR``,
    an estimate whose mean misses its planted value by more than ``BIAS_MC_SE`` Monte Carlo SEs
    (e.g. OPB's β_A under a null: docs/analysis.md, "β of F_att under a null")."""
    out = []
    for name, values in point["estimates"].items():
        bias, bias_se = values["bias"]["value"], values["bias"]["se"]
        if bias is not None and bias_se is not None and abs(bias) > BIAS_MC_SE * bias_se > 0:
            out.append(
                f"{name}: its estimate misses the planted value by {bias:+.3g} on average "
                f"({abs(bias) / bias_se:.1f} Monte Carlo SE): the estimator is biased in this "
                "world, so its power and coverage include that bias."
            )
        power = values["power"]["value"]
        if power is not None and power < POWER_TARGET:
            out.append(
                f"{name}: the study finds this in only {power:.0%} of simulations "
                f"(power below {POWER_TARGET:.0%})."
            )
        coverage = values["coverage"]["value"]
        if coverage is not None and coverage < COVERAGE_FLOOR:
            out.append(
                f"{name}: its interval holds the true value in only {coverage:.0%} of "
                f"simulations (below {COVERAGE_FLOOR:.0%}): the interval is too narrow here."
            )
    for where, shares in point["stages"].items():
        label = where or "the decision table"
        drawn = {
            key.removeprefix("finding:"): share["value"]
            for key, share in shares.items()
            if key.startswith("finding:") and share["value"] is not None
        }
        if drawn:
            finding, share = max(drawn.items(), key=lambda kv: (kv[1], kv[0]))
            if share < POWER_TARGET:
                out.append(
                    f"{label}: even its most likely finding, {finding}, is drawn in only "
                    f"{share:.0%} of simulations in this world (below {POWER_TARGET:.0%})."
                )
        not_evaluable = shares.get("not_evaluable", {}).get("value") or 0
        if not_evaluable > 1 - POWER_TARGET:
            out.append(f"{label}: not evaluable in {not_evaluable:.0%} of simulations.")
    return out
