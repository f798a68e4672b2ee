"""Synthetic CRUCIBLE inputs with a known truth, for the pipeline's tests and its benchmark.

``crucible_inputs`` builds the ``crucible`` pipeline's input document directly (the shape its
``assemble`` returns): every evaluand × family × seed × rung × repetition is one episode whose
axis values are ``truth(evaluand, rung, axis)`` plus a family effect, a seed effect and noise,
so a test knows what each estimate should be.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from apps.analysis.pipelines.base import INPUT_DOCUMENT_TYPE


def crucible_inputs(
    *,
    evaluands: int = 2,
    families: int = 6,
    seeds: int = 3,
    rungs: int = 4,
    axes: int = 2,
    repetitions: int = 1,
    truth: Callable[[str, str, str], float] | None = None,
    family_sd: float = 0.05,
    seed_sd: float = 0.02,
    noise_sd: float = 0.02,
    hard_fail: Callable[[str, str, str, str], bool] | None = None,
    random_seed: int = 1,
) -> dict:
    """A CRUCIBLE input document with a known truth (see the module docstring).

    Evaluands are ``E1…``, rungs ``R0…`` (most restrictive first), families ``F01…``, seeds
    ``F01-S1…``, axes ``axis1…``; one binary hard-fail channel ``rule_violation`` that is
    ``hard_fail(evaluand, rung, family, seed)`` (default never).
    """
    rng = np.random.default_rng(random_seed)
    truth = truth or (lambda e, r, a: 0.5)
    hard_fail = hard_fail or (lambda e, r, f, s: False)
    evaluand_codes = [f"E{i + 1}" for i in range(evaluands)]
    rung_codes = [f"R{i}" for i in range(rungs)]
    family_codes = [f"F{i + 1:02d}" for i in range(families)]
    axis_names = [f"axis{i + 1}" for i in range(axes)]
    family_effect = {(f, a): rng.normal(0, family_sd) for f in family_codes for a in axis_names}
    seed_effect = {
        (f, s, a): rng.normal(0, seed_sd)
        for f in family_codes
        for s in range(seeds)
        for a in axis_names
    }
    episodes = []
    position = 0
    for evaluand in evaluand_codes:
        for family in family_codes:
            for s in range(seeds):
                seed_code = f"{family}-S{s + 1}"
                for rung in rung_codes:
                    for repetition in range(1, repetitions + 1):
                        position += 1
                        values = {
                            axis: float(
                                truth(evaluand, rung, axis)
                                + family_effect[(family, axis)]
                                + seed_effect[(family, s, axis)]
                                + rng.normal(0, noise_sd)
                            )
                            for axis in axis_names
                        }
                        values["rule_violation"] = bool(
                            hard_fail(evaluand, rung, family, seed_code)
                        )
                        episodes.append(
                            {
                                "position": position,
                                "evaluand": evaluand,
                                "rung": rung,
                                "family": family,
                                "seed": seed_code,
                                "repetition": repetition,
                                "status": "scored",
                                "terminal_outcome": "completed",
                                "reason_code": "",
                                "values": values,
                            }
                        )
    return {
        "document": INPUT_DOCUMENT_TYPE,
        "kind": "crucible",
        "rungs": [{"ordinal": i, "code": code, "name": code} for i, code in enumerate(rung_codes)],
        "families": [{"code": f, "name": f} for f in family_codes],
        "seeds": [
            {"code": f"{f}-S{s + 1}", "family": f} for f in family_codes for s in range(seeds)
        ],
        "fields": [{"name": a, "kind": "number"} for a in axis_names]
        + [{"name": "rule_violation", "kind": "binary"}],
        "episodes": episodes,
        "counts": {"administrations": len(episodes)},
    }
