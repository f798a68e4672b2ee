"""Diagnosands of a simulated design (issue #35 §2), pure: no ORM, no settings.

A design is diagnosed the way DeclareDesign's ``diagnose_design()`` does it (Blair, Cooper,
Coppock and Humphreys, *Research Design in the Social Sciences*, Princeton 2023, ch. 10;
``DeclareDesign::diagnose_design``): the design is simulated ``sims`` times; each simulation
draws data from the declared model of the world, runs the answer strategy on them and pairs each
estimate with its estimand (the value the world planted). Over the simulations:

- ``mean_estimate``, ``sd_estimate``: the mean and (n − 1) standard deviation of the estimate;
- ``bias``: mean(estimate − estimand); ``rmse``: sqrt(mean((estimate − estimand)²));
- ``power``: the share of simulations whose test rejects (its ``significant`` flag: the
  interval excludes the null, or the finding the estimate supports is drawn);
- ``coverage``: the share whose interval holds the estimand; ``mean_width``: the interval's
  mean width;
- ``type_s_rate``: among the simulations that reject, the share whose estimate has the sign
  opposite to the estimand's (Gelman and Carlin 2014, "Beyond power calculations", Perspect.
  Psychol. Sci. 9:641);
- ``not_computed``: the share of simulations in which the estimate had no value.

Each diagnosand's Monte Carlo standard error is, as in ``diagnose_design`` (its
``bootstrap_sims``), the standard deviation of the diagnosand over ``bootstrap`` resamples of the
simulations with replacement, drawn from the diagnosis' own seed.

For decision tables (``findings``): the share of simulations in which each finding is drawn, in
which the stage is "not evaluable" and in which it is "contradictory", with the same MC SE.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

BOOTSTRAP_SIMS = 100  # DeclareDesign's default ``bootstrap_sims``

DIAGNOSANDS = (
    "mean_estimate",
    "sd_estimate",
    "bias",
    "rmse",
    "power",
    "coverage",
    "mean_width",
    "type_s_rate",
    "not_computed",
)

DIAGNOSAND_TITLES = {
    "mean_estimate": "Mean estimate",
    "sd_estimate": "SD of estimate",
    "bias": "Bias",
    "rmse": "RMSE",
    "power": "Power",
    "coverage": "Coverage",
    "mean_width": "Mean interval width",
    "type_s_rate": "Type-S rate",
    "not_computed": "Not computed",
}


@dataclass(frozen=True)
class Draw:
    """One estimate of one simulation, paired with its estimand.

    ``estimate`` is None when the pipeline could not compute it; ``estimand`` is None when the
    world plants no true value for it (then bias, RMSE, coverage and type-S are not defined);
    ``low``/``high`` the interval's bounds (None: no interval); ``significant`` whether the
    estimate's test rejects or its finding is drawn (None: it has no test).
    """

    estimate_id: str
    estimate: float | None
    estimand: float | None = None
    low: float | None = None
    high: float | None = None
    significant: bool | None = None

    @classmethod
    def from_interval(
        cls,
        estimate_id: str,
        estimate: float | None,
        interval: Sequence[float] | None,
        *,
        estimand: float | None,
        above: float | None = None,
        below: float | None = None,
        significant: bool | None = None,
    ) -> Draw:
        """The draw of an estimate a result reports with an interval (``[low, high]``, or None
        where it has none), as the kinds' worlds read their results.

        With ``above`` or ``below`` the interval is the test: significant when it lies wholly
        above ``above`` or wholly below ``below`` (both given the same null: when it excludes
        the null on either side), undecided (None) without an interval. Without either, the
        draw carries ``significant`` as given (the result's own test, or None: no test).
        """
        low, high = (float(interval[0]), float(interval[1])) if interval else (None, None)
        if above is not None or below is not None:
            significant = (
                None
                if low is None or high is None
                else (above is not None and low > above) or (below is not None and high < below)
            )
        return cls(
            estimate_id, estimate, estimand=estimand, low=low, high=high, significant=significant
        )


@dataclass(frozen=True)
class Stage:
    """One decision stage of one simulation, as the report's headline reads it
    (``apps.analysis.headline``): where, the findings drawn, evaluable or not, contradictory."""

    where: str
    findings: tuple[str, ...]
    evaluated: bool
    contradictory: bool


@dataclass
class Simulation:
    draws: list[Draw] = field(default_factory=list)
    stages: list[Stage] = field(default_factory=list)


def _mean(values: np.ndarray) -> float | None:
    return float(values.mean()) if values.size else None


def _diagnose_estimate(rows: Sequence[Draw]) -> dict[str, float | None]:
    """The diagnosands of one estimate over its simulations (module docstring)."""
    out: dict[str, float | None] = dict.fromkeys(DIAGNOSANDS)
    computed = [
        (float(r.estimate), r) for r in rows if r.estimate is not None and math.isfinite(r.estimate)
    ]
    out["not_computed"] = 1 - len(computed) / len(rows) if rows else None
    if not computed:
        return out
    est = np.array([e for e, _ in computed], dtype=float)
    out["mean_estimate"] = float(est.mean())
    out["sd_estimate"] = float(est.std(ddof=1)) if est.size > 1 else None
    truths = [(e, float(r.estimand), r) for e, r in computed if r.estimand is not None]
    if truths:
        err = np.array([e - t for e, t, _ in truths], dtype=float)
        out["bias"] = float(err.mean())
        out["rmse"] = float(math.sqrt(float(np.mean(err * err))))
    tested = [bool(r.significant) for _, r in computed if r.significant is not None]
    if tested:
        out["power"] = _mean(np.array(tested, dtype=float))
    held = [
        float(r.low) <= t <= float(r.high)
        for _, t, r in truths
        if r.low is not None and r.high is not None
    ]
    if held:
        out["coverage"] = _mean(np.array(held, dtype=float))
    widths = [
        float(r.high) - float(r.low)
        for _, r in computed
        if r.low is not None and r.high is not None
    ]
    if widths:
        out["mean_width"] = _mean(np.array(widths, dtype=float))
    wrong = [(e > 0) != (t > 0) for e, t, r in truths if r.significant and t != 0]
    if wrong:
        out["type_s_rate"] = _mean(np.array(wrong, dtype=float))
    return out


def _diagnose_stages(
    sims: Sequence[Simulation], indices: Iterable[int]
) -> dict[str, dict[str, float]]:
    """Per decision stage (by ``where``): the share of simulations drawing each finding, not
    evaluable, and contradictory, over the simulations ``indices``."""
    chosen = [sims[i] for i in indices]
    wheres = sorted({s.where for sim in sims for s in sim.stages})
    out: dict[str, dict[str, float]] = {}
    n = len(chosen) or 1
    for where in wheres:
        counts: dict[str, float] = {"not_evaluable": 0.0, "contradictory": 0.0}
        for sim in sims:
            for stage in sim.stages:
                if stage.where == where:
                    for finding in stage.findings:
                        counts.setdefault(f"finding:{finding}", 0.0)
        for sim in chosen:
            for stage in (s for s in sim.stages if s.where == where):
                if not stage.evaluated:
                    counts["not_evaluable"] += 1
                elif stage.contradictory:
                    counts["contradictory"] += 1
                for finding in set(stage.findings) if stage.evaluated else ():
                    counts[f"finding:{finding}"] += 1
        out[where] = {k: v / n for k, v in counts.items()}
    return out


def _bootstrap_se(
    n: int, statistic: Callable[[np.ndarray], dict[str, Any]], rng: np.random.Generator, b: int
) -> dict[str, Any]:
    """The SD of each number ``statistic(indices)`` returns (nested dicts of floats or None)
    over ``b`` resamples of ``range(n)`` with replacement: DeclareDesign's bootstrap SE."""
    samples = [statistic(rng.integers(0, n, n)) for _ in range(b)]

    def spread(keys: tuple[str, ...]) -> float | None:
        values = []
        for sample in samples:
            node: Any = sample
            for key in keys:
                node = node.get(key) if isinstance(node, dict) else None
            if node is not None:
                values.append(float(node))
        return float(np.std(values, ddof=1)) if len(values) > 1 else None

    def walk(node: Any, keys: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            return {k: walk(v, (*keys, k)) for k, v in node.items()}
        return None if node is None else spread(keys)

    return walk(statistic(np.arange(n)), ())  # type: ignore[no-any-return]


def diagnosands(
    sims: Sequence[Simulation], *, seed: int, bootstrap: int = BOOTSTRAP_SIMS
) -> dict[str, Any]:
    """The diagnosands of ``sims`` (module docstring) with their Monte Carlo SEs.

    Returns ``{"estimates": {estimate_id: {diagnosand: {"value", "se"}}}, "stages": {where:
    {"finding:<text>" | "not_evaluable" | "contradictory": {"value", "se"}}}, "sims": n}``; a
    diagnosand that is not defined (no estimand, no interval, no test) has value and SE None.
    Raises ValueError for no simulation.
    """
    if not sims:
        raise ValueError("a diagnosis needs at least one simulation")
    ids = list(dict.fromkeys(d.estimate_id for sim in sims for d in sim.draws))
    # Each simulation's draws by estimate, once: a design with hundreds of estimates (CRUCIBLE's
    # evaluand × rung × axis cells) is then resampled in time linear in its draws.
    by_sim: list[dict[str, list[Draw]]] = []
    for sim in sims:
        grouped: dict[str, list[Draw]] = {}
        for d in sim.draws:
            grouped.setdefault(d.estimate_id, []).append(d)
        by_sim.append(grouped)

    def statistic(indices: np.ndarray) -> dict[str, Any]:
        estimates = {
            eid: _diagnose_estimate([d for i in indices for d in by_sim[i].get(eid, ())])
            for eid in ids
        }
        return {"estimates": estimates, "stages": _diagnose_stages(sims, indices)}

    point = statistic(np.arange(len(sims)))
    se = _bootstrap_se(len(sims), statistic, np.random.default_rng(seed), bootstrap)

    def pair(values: dict[str, Any], errors: dict[str, Any]) -> dict[str, Any]:
        return {
            key: {"value": _round(value), "se": _round(errors.get(key))}
            for key, value in values.items()
        }

    return {
        "sims": len(sims),
        "bootstrap_sims": bootstrap,
        "estimates": {eid: pair(point["estimates"][eid], se["estimates"][eid]) for eid in ids},
        "stages": {
            where: pair(point["stages"][where], se["stages"][where]) for where in point["stages"]
        },
    }


def _round(value: float | None) -> float | None:
    """Twelve significant digits: the document's numbers do not carry the last bits of the
    platform's floating point, so reruns compare byte for byte across BLAS builds."""
    return None if value is None else float(f"{value:.12g}")


def simulate(
    run_once: Callable[[np.random.Generator, int], Simulation],
    *,
    sims: int,
    seed: int,
    progress: Callable[[int, str], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> list[Simulation]:
    """``sims`` simulations of a design: ``run_once(rng, i)`` for i = 0 … sims − 1, each with
    its own generator spawned from ``seed`` (``numpy.random.SeedSequence.spawn``), so a
    simulation's draws do not depend on how many came before. ``progress(percent, message)``
    is told after each; ``cancelled()``, asked before each, stops the loop with
    ``DiagnosisCancelled``."""
    children = np.random.SeedSequence(seed).spawn(sims)
    out = []
    for i, child in enumerate(children):
        if cancelled is not None and cancelled():
            raise DiagnosisCancelled(f"cancelled after {i} of {sims} simulations")
        out.append(run_once(np.random.default_rng(child), i))
        if progress is not None:
            progress(int(100 * (i + 1) / sims), f"simulation {i + 1} of {sims}")
    return out


class DiagnosisCancelled(Exception):
    """The PI cancelled the diagnosis; nothing of it is kept."""
