"""The batched, weighted beta regression behind the bootstrap of β: it is the ML fit.

With all weights 1 it must reproduce ``betareg.fit_beta_regression`` (itself checked against R
``betareg``'s published output); with integer weights w it must equal the fit on the data
with each row repeated w times; and the bootstrap must be reproducible from its seed.
"""

import numpy as np
import pandas as pd
import pytest
from statsmodels.othermod.betareg import BetaModel

from apps.analysis.stats.beta_bootstrap import (
    beta_cluster_bootstrap,
    beta_cluster_robust,
    beta_information,
    beta_scores,
    fit_beta_many,
    fit_beta_weighted,
)
from apps.analysis.stats.betareg import fit_beta_regression
from apps.analysis.stats.bootstrap import cluster_weights


@pytest.fixture
def food(reference_csv):
    data = reference_csv("FoodExpenditure.csv")
    return data.assign(y=data["food"] / data["income"])


def _design(data):
    return np.column_stack([np.ones(len(data)), data["income"], data["persons"]])


def test_unit_weights_reproduce_the_maximum_likelihood_fit(food):
    reference = fit_beta_regression(food, "y ~ income + persons")
    # R betareg, FoodExpenditure, food/income ~ income + persons: −0.6225, −0.0123, 0.1185.
    params, converged = fit_beta_weighted(
        food["y"], _design(food), np.ones(len(food)), start=np.zeros(4)
    )
    assert converged.all()
    expected = [*reference.coefficients.values(), np.log(reference.phi)]
    np.testing.assert_allclose(params, expected, rtol=1e-7, atol=1e-9)


def test_integer_weights_equal_repeating_the_rows(food):
    weights = np.random.default_rng(4).integers(0, 4, len(food))
    repeated = fit_beta_regression(food.loc[food.index.repeat(weights)], "y ~ income + persons")
    params, _ = fit_beta_weighted(
        food["y"], _design(food), weights, start=np.r_[-0.6, -0.01, 0.1, 3.5]
    )
    expected = [*repeated.coefficients.values(), np.log(repeated.phi)]
    np.testing.assert_allclose(params, expected, rtol=1e-7, atol=1e-9)


def test_many_weight_rows_are_fitted_at_once_like_one_by_one(food):
    weights = np.random.default_rng(5).integers(0, 3, (4, len(food)))
    start = np.r_[-0.6, -0.01, 0.1, 3.5]
    together, _ = fit_beta_weighted(food["y"], _design(food), weights, start=start)
    for row, params in zip(weights, together, strict=True):
        alone, _ = fit_beta_weighted(food["y"], _design(food), row, start=start)
        np.testing.assert_allclose(params, alone, rtol=1e-9)


def _clustered(seed=1, items=12):
    rng = np.random.default_rng(seed)
    item = np.repeat(np.arange(items), 20)
    level = np.tile(np.repeat(np.arange(4), 5), items)
    mu = 1 / (1 + np.exp(-(-1.5 + 0.4 * level + rng.normal(0, 0.3, items)[item])))
    y = rng.beta(mu * 8, (1 - mu) * 8)
    n = len(y)
    return (y * (n - 1) + 0.5) / n, level, item


def test_the_cluster_bootstrap_is_reproducible_and_covers_the_estimate():
    y, level, item = _clustered()
    fit = fit_beta_regression(pd.DataFrame({"y": y, "level": level}), "y ~ level")
    start = np.r_[fit.coefficients["Intercept"], fit.coefficients["level"], np.log(fit.phi)]
    X = np.column_stack([np.ones(len(y)), level])
    kwargs = dict(names=["Intercept", "level"], start=start, replicates=500, confidence=0.95)
    first = beta_cluster_bootstrap(y, X, item, seed=11, **kwargs)
    again = beta_cluster_bootstrap(y, X, item, seed=11, **kwargs)
    other = beta_cluster_bootstrap(y, X, item, seed=12, **kwargs)
    assert first.intervals == again.intervals and first.intervals != other.intervals
    lo, hi = first.intervals["level"]
    assert lo < fit.coefficients["level"] < hi
    assert first.dropped == 0 and first.n_clusters == 12


def test_each_replicate_is_the_fit_on_its_resampled_clusters():
    y, level, item = _clustered(seed=3)
    fit = fit_beta_regression(pd.DataFrame({"y": y, "level": level}), "y ~ level")
    start = np.r_[fit.coefficients["Intercept"], fit.coefficients["level"], np.log(fit.phi)]
    result = beta_cluster_bootstrap(
        y,
        np.column_stack([np.ones(len(y)), level]),
        item,
        names=["Intercept", "level"],
        start=start,
        seed=21,
        replicates=3,
    )
    draws = cluster_weights(12, 3, np.random.default_rng(21))
    for b in range(3):
        rows = np.repeat(np.arange(len(y)), draws[b][item])
        refit = fit_beta_regression(pd.DataFrame({"y": y[rows], "level": level[rows]}), "y ~ level")
        assert result.coefficient_replicates("level")[b] == pytest.approx(
            refit.coefficients["level"], rel=1e-7
        )


def test_too_few_clusters_give_no_interval():
    y, level, item = _clustered(items=4)
    result = beta_cluster_bootstrap(
        y,
        np.column_stack([np.ones(len(y)), level]),
        item,
        names=["Intercept", "level"],
        start=np.r_[-1.5, 0.4, 2.0],
        seed=1,
        replicates=50,
    )
    assert result.intervals == {"Intercept": None, "level": None} and "4 clusters" in result.note


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="strictly inside"):
        fit_beta_weighted([0.0, 0.5], np.ones((2, 1)), np.ones(2), start=[0, 1])
    with pytest.raises(ValueError, match="weights"):
        fit_beta_weighted([0.2, 0.5], np.ones((2, 1)), [-1, 1], start=[0, 1])
    with pytest.raises(ValueError, match="shapes"):
        fit_beta_weighted([0.2, 0.5], np.ones((3, 1)), np.ones(2), start=[0, 1])


def test_scores_and_information_are_statsmodels_betamodel_s():
    # statsmodels' BetaModel is an independent implementation of Ferrari & Cribari-Neto (2004):
    # its score_obs and its expected-information covariance are the pieces of our sandwich.
    y, level, _ = _clustered(seed=5)
    X = np.column_stack([np.ones(len(y)), level])
    model = BetaModel(y, X)
    fit = model.fit(disp=False, method="newton", cov_type="eim")
    params = np.asarray(fit.params)
    np.testing.assert_allclose(beta_scores(y, X, params), model.score_obs(params), rtol=1e-6)
    np.testing.assert_allclose(
        np.linalg.inv(beta_information(X, params)), fit.cov_params(), rtol=1e-6
    )
    many, converged = fit_beta_many(np.vstack([y, y]), X, start=params + 0.1)
    assert converged.all()
    np.testing.assert_allclose(many, np.vstack([params, params]), rtol=1e-6)


def test_the_cluster_robust_covariance_is_the_cr1_sandwich_and_grows_with_item_slopes():
    y, level, item = _clustered(seed=6)
    X = np.column_stack([np.ones(len(y)), level])
    params = fit_beta_many(y[None, :], X, start=np.zeros(3))[0][0]
    cov, g = beta_cluster_robust(y, X, params, item)
    # Written out observation by observation: the CR1 sandwich of Cameron & Miller (2015).
    u = BetaModel(y, X).score_obs(params)
    sums = np.vstack([u[item == j].sum(axis=0) for j in range(12)])
    bread = np.linalg.inv(beta_information(X, params))
    factor = 12 / 11 * (len(y) - 1) / (len(y) - 3)
    np.testing.assert_allclose(cov, factor * bread @ (sums.T @ sums) @ bread, rtol=1e-6)
    assert g == 12
    # Independent responses: robust ≈ model-based; item slopes: robust SE well above it.
    rng = np.random.default_rng(0)
    slope = rng.normal(0, 0.4, 12)[item]
    mu = 1 / (1 + np.exp(-(-1.0 + (0.3 + slope) * level)))
    y2 = np.clip(rng.beta(mu * 10, (1 - mu) * 10), 1e-4, 1 - 1e-4)
    p2 = fit_beta_many(y2[None, :], X, start=np.zeros(3))[0][0]
    robust = np.sqrt(beta_cluster_robust(y2, X, p2, item)[0][1, 1])
    naive = np.sqrt(np.linalg.inv(beta_information(X, p2))[1, 1])
    assert robust > 1.5 * naive
