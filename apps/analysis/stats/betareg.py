"""Beta regression for F_att (OPB-01 §7: "beta regression for F_att").

Wraps ``statsmodels.othermod.betareg.BetaModel`` (Ferrari & Cribari-Neto 2004): logit link for
the mean, log link for the precision φ (constant unless a precision formula is given), fitted
by maximum likelihood. Standard errors use the expected (Fisher) information, as R's
``betareg`` does by default, so they can be checked against R's published output.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

# FormulaManager is the engine BetaModel itself uses for ``exog_precision_formula``; it is
# called here with pandas output so the precision coefficients keep their names.
from statsmodels.formula._manager import FormulaManager
from statsmodels.othermod.betareg import BetaModel
from statsmodels.tools.sm_exceptions import MissingDataError

_MISSING_ROWS = (
    "{n} rows have missing values in the model's columns; exclude them explicitly (and record "
    "the exclusion) before fitting"
)


@dataclass(frozen=True)
class BetaRegressionResult:
    """A fitted beta regression; ``to_dict`` is JSON-serialisable.

    ``coefficients``/``std_errors``: mean model, logit scale. ``precision_coefficients`` /
    ``precision_std_errors``: precision model, log scale. ``phi``/``phi_std_error``: φ itself
    (delta method) when the precision is constant, else ``None``.
    """

    coefficients: dict[str, float]
    std_errors: dict[str, float]
    precision_coefficients: dict[str, float]
    precision_std_errors: dict[str, float]
    phi: float | None
    phi_std_error: float | None
    log_likelihood: float
    n: int
    converged: bool
    formula: str
    precision_formula: str | None
    information: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def squeeze_unit_interval(y: npt.ArrayLike, n: int | None = None) -> np.ndarray:
    """Map [0, 1] into (0, 1): y' = (y·(n − 1) + 0.5) / n (Smithson & Verkuilen 2006, p. 55).

    F_att is exactly 0 for a fully fulfilled response and exactly 1 for a refusal, where the
    beta density is undefined. As in the paper, the transformation is applied to every value,
    not only to the 0s and 1s: it is a monotone linear map, so the order of responses is kept
    (moving only the boundary values could place a 0 above a small positive value).

    Args:
        y: 1-D array of values in [0, 1].
        n: the sample size N of the formula; defaults to ``len(y)``. Freeze it in the plan if
            the fit uses a subset.

    Raises:
        ValueError: values outside [0, 1] or not finite, empty ``y``, or ``n`` < 2.
    """
    arr = np.asarray(y, dtype=float)
    if arr.size == 0:
        raise ValueError("y is empty")
    if not np.all(np.isfinite(arr)) or np.any((arr < 0) | (arr > 1)):
        raise ValueError("y must be finite and within [0, 1]")
    n = arr.size if n is None else n
    if n < 2:
        raise ValueError(f"n must be >= 2, got {n}")
    return (arr * (n - 1) + 0.5) / n


def fit_beta_regression(
    data: pd.DataFrame,
    formula: str,
    precision_formula: str | None = None,
    *,
    information: Literal["expected", "observed"] = "expected",
) -> BetaRegressionResult:
    """Fit a beta regression by maximum likelihood.

    Args:
        data: one row per response; the outcome must lie strictly inside (0, 1) — apply
            :func:`squeeze_unit_interval` first if the plan says so.
        formula: mean model, e.g. ``"f_att ~ level * family"`` (statsmodels' formula engine,
            patsy by default; column names must be valid identifiers, and a factor's reference
            level is its first category).
        precision_formula: optional one-sided precision model, e.g. ``"~ family"`` (R's
            ``y ~ x | z``); ``None`` means constant precision φ.
        information: standard errors from the inverse ``"expected"`` (Fisher) information,
            R ``betareg``'s default, or the ``"observed"`` information (R's
            ``hessian = TRUE``).

    Estimation: statsmodels' BFGS from its default start values, then Newton steps from that
    point (as R refines BFGS with Fisher scoring), because BFGS alone stops early when
    covariates are badly scaled (GasolineYield's ``temp``).

    Returns:
        :class:`BetaRegressionResult`. ``converged`` is False if the Newton refinement did
        not converge; such a fit must not be reported as a finding.

    Reference:
        Ferrari, S. L. P. & Cribari-Neto, F. (2004), J. Appl. Stat. 31(7); Cribari-Neto, F. &
        Zeileis, A. (2010), "Beta Regression in R", J. Stat. Softw. 34(2).

    Raises:
        ValueError: an outcome outside (0, 1), rows dropped for missing values (exclude them
            explicitly and record the exclusion), or an unusable formula.
    """
    if data.empty:
        raise ValueError("data has no rows")
    if information not in ("expected", "observed"):
        raise ValueError(f"information must be 'expected' or 'observed', got {information!r}")
    kwargs = {}
    if precision_formula is not None:
        try:
            z = FormulaManager().get_matrices(precision_formula, data, pandas=True)
        except Exception as exc:  # the engines raise their own exception types
            raise ValueError(f"precision formula {precision_formula!r}: {exc}") from exc
        if len(z) != len(data):
            raise ValueError(_MISSING_ROWS.format(n=len(data) - len(z)))
        kwargs["exog_precision"] = z
    try:
        model = BetaModel.from_formula(formula, data, missing="raise", **kwargs)
    except MissingDataError as exc:
        raise ValueError(_MISSING_ROWS.format(n="some")) from exc
    except AssertionError as exc:
        # BetaModel checks the support with a bare assert.
        raise ValueError("the outcome must lie strictly inside (0, 1); squeeze it first") from exc
    except Exception as exc:
        raise ValueError(f"formula {formula!r}: {exc}") from exc
    y = np.asarray(model.endog)
    if np.any((y <= 0) | (y >= 1)):
        raise ValueError("the outcome must lie strictly inside (0, 1); squeeze it first")

    with warnings.catch_warnings():
        # BFGS only provides the start for the Newton refinement; its own warning is moot.
        warnings.simplefilter("ignore")
        start = model.fit(disp=False).params
        cov = {"cov_type": "eim"} if information == "expected" else {}
        fit = model.fit(start_params=np.asarray(start), method="newton", disp=False, **cov)

    names = list(model.exog_names)
    params, bse = np.asarray(fit.params), np.asarray(fit.bse)
    k = len(model.exog_names) - model.exog_precision.shape[1]
    mean_names, precision_names = names[:k], [_strip(n) for n in names[k:]]
    phi = phi_se = None
    if precision_formula is None:
        phi = float(np.exp(params[k]))
        phi_se = float(phi * bse[k])
        precision_names = ["Intercept"]
    return BetaRegressionResult(
        coefficients=dict(zip(mean_names, map(float, params[:k]), strict=True)),
        std_errors=dict(zip(mean_names, map(float, bse[:k]), strict=True)),
        precision_coefficients=dict(zip(precision_names, map(float, params[k:]), strict=True)),
        precision_std_errors=dict(zip(precision_names, map(float, bse[k:]), strict=True)),
        phi=phi,
        phi_std_error=phi_se,
        log_likelihood=float(fit.llf),
        n=int(model.nobs),
        converged=bool(fit.mle_retvals.get("converged", False)),
        formula=formula,
        precision_formula=precision_formula,
        information=information,
    )


def _strip(name: str) -> str:
    return name.removeprefix("precision-")
