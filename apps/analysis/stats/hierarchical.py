"""The hierarchical sensitivity model of CRUCIBLE §9.2, and its disagreement with the bootstrap.

For one graded axis: evaluand, autonomy rung and their interaction as fixed effects; scenario
family as a random intercept; seed variant nested within family as a variance component —
statsmodels' ``MixedLM`` (Lindstrom & Bates 1988, J. Am. Stat. Assoc. 83(404); the
statsmodels variance-components interface, ``vc_formula``) for a gaussian response, and
``BinomialBayesMixedGLM`` (logit link, variational Bayes; statsmodels' ``fit_vb``) for a binary
axis whose frozen response family is ``binomial``.

The model's fitted evaluand × rung cell means (fixed effects only) are compared with the
family-clustered bootstrap's point estimates: within each rung, a pair of evaluands whose
difference has opposite signs in the two analyses is a disagreement, reported as such and never
resolved (§9.2: the hierarchical analysis is secondary).

Pure: no ORM, no settings.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

RESPONSE_FAMILIES = ("gaussian", "binomial")


def fit_axis(frame: pd.DataFrame, *, family: str = "gaussian") -> dict[str, Any]:
    """Fit the §9.2 model to one axis.

    Args:
        frame: one row per eligible seed-level observation with columns ``value`` (float; 0/1
            for ``binomial``), ``evaluand``, ``rung``, ``family`` and ``seed`` (labels).
        family: the frozen response family, ``gaussian`` or ``binomial`` (logit link).

    Returns:
        ``{"fitted": bool, "family", "cells": [{"evaluand", "rung", "mean"}], "note"}`` —
        ``cells`` are the fixed-effects cell means (the response scale: probabilities for
        ``binomial``); ``fitted`` False with a ``note`` when the model cannot be fitted (fewer
        than two families, one evaluand and rung only, or the optimiser fails), never an
        exception.

    Raises:
        ValueError: an unknown ``family``.
    """
    if family not in RESPONSE_FAMILIES:
        raise ValueError(f"family must be one of {RESPONSE_FAMILIES}, got {family!r}")
    out: dict[str, Any] = {"fitted": False, "family": family, "cells": [], "note": ""}
    if frame["family"].nunique() < 2:
        out["note"] = "fewer than two scenario families: no random intercept can be estimated"
        return out
    # The evaluand × rung interaction model in its cell-means parametrisation (one fixed effect
    # per evaluand × rung cell, no intercept): the same column space as evaluand + rung +
    # evaluand:rung, whose coefficients are the cell means themselves.
    frame = frame.assign(cell=frame["evaluand"].astype(str) + "|" + frame["rung"].astype(str))
    cells = sorted(frame["cell"].unique())
    formula = "value ~ 0 + C(cell)"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if family == "gaussian":
                from statsmodels.regression.mixed_linear_model import MixedLM

                # Built as arrays, not through a formula: the seed-within-family variance
                # component as one indicator matrix per family (statsmodels' ``exog_vc``).
                frame = frame.sort_values(["family", "seed"], kind="stable")
                exog = pd.get_dummies(frame["cell"], dtype=float)[cells].to_numpy()
                groups = frame["family"].to_numpy()
                exog_vc: dict[str, dict[Hashable, npt.NDArray[np.float64]]] = {"seed": {}}
                for code, part in frame.groupby("family", sort=True):
                    exog_vc["seed"][code] = pd.get_dummies(part["seed"], dtype=float).to_numpy()
                model = MixedLM(
                    frame["value"].to_numpy(dtype=float),
                    exog,
                    groups,
                    exog_re=np.ones((len(frame), 1)),
                    exog_vc=exog_vc,
                )
                result = model.fit(reml=True, method=["lbfgs", "powell"])
                means = [float(x) for x in np.asarray(result.fe_params)]
                out["converged"] = bool(result.converged)
                out["family_variance"] = float(np.asarray(result.cov_re)[0, 0])
                out["seed_variance"] = float(np.asarray(result.vcomp)[0])
            else:
                from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM

                model = BinomialBayesMixedGLM.from_formula(
                    formula,
                    {"family": "0 + C(family)", "seed": "0 + C(seed)"},
                    frame,
                )
                result = model.fit_vb()
                names = list(model.exog_names)
                linear = [float(result.fe_mean[names.index(_name(names, c))]) for c in cells]
                means = [float(1.0 / (1.0 + np.exp(-x))) for x in linear]
                out["converged"] = True
    except Exception as error:  # a model that cannot be fitted is reported, not raised
        out["note"] = f"the model could not be fitted: {error}"
        return out
    out["fitted"] = True
    out["cells"] = [
        {"evaluand": c.split("|", 1)[0], "rung": c.split("|", 1)[1], "mean": m}
        for c, m in zip(cells, means, strict=True)
    ]
    return out


def _name(names: Sequence[str], cell: str) -> str:
    return next(n for n in names if str(n).endswith(f"[{cell}]") or str(n).endswith(f"[T.{cell}]"))


def disagreements(
    bootstrap: Mapping[tuple[str, str], float | None],
    model: Sequence[Mapping[str, Any]],
    *,
    rungs: Sequence[str],
) -> list[dict[str, Any]]:
    """Pairs of evaluands, within a rung, whose difference has opposite signs in the bootstrap
    point estimates and in the model's cell means (a different rank order is the same thing
    pairwise). Ties (a difference of exactly 0 in either) are not called a disagreement.

    Args:
        bootstrap: (evaluand, rung) → the bootstrap point estimate (None: not observed).
        model: the ``cells`` of :func:`fit_axis`.
        rungs: the rung codes to compare within, in ladder order.
    """
    fitted = {(c["evaluand"], c["rung"]): c["mean"] for c in model}
    out = []
    evaluands = sorted({e for e, _ in bootstrap})
    for rung in rungs:
        for a, b in combinations(evaluands, 2):
            keys = [(a, rung), (b, rung)]
            first, second = bootstrap.get(keys[0]), bootstrap.get(keys[1])
            if first is None or second is None or any(k not in fitted for k in keys):
                continue
            boot = first - second
            fit = fitted[keys[0]] - fitted[keys[1]]
            if boot * fit < 0:
                out.append(
                    {
                        "rung": rung,
                        "evaluands": [a, b],
                        "bootstrap_difference": float(boot),
                        "model_difference": float(fit),
                    }
                )
    return out
