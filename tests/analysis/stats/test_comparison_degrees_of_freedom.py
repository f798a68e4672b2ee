"""The comparison pipeline's Bell–McCaffrey degrees of freedom under a working model
(``stats.comparison``): the fast formula against G'ΩG built from its definition (Imbens &
Kolesár 2016, §III eq. 10), and the variance components against statsmodels' REML fit, which
equals the ANOVA estimator on balanced data (Searle, Casella & McCulloch 1992, §4.8)."""

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy.stats import t as t_distribution

from apps.analysis.stats.comparison import (
    _fit,
    _nested,
    clustered_difference,
    residual_components,
)


def _unequal(rng, clusters, low=1, high=30):
    return rng.integers(low, high, size=clusters)


def _by_definition(design, y, codes, ell, within, between):
    """(Σλ)²/Σλ² of G'ΩG with G's column g = (I − H)[:, g] A_g X_g M ℓ, every matrix formed."""
    n = y.size
    bread = np.linalg.pinv(design.T @ design)
    hat = design @ bread @ design.T
    omega = within * np.eye(n) + between * (codes[:, None] == codes[None, :])
    columns = []
    for g in np.unique(codes):
        rows = np.flatnonzero(codes == g)
        h_gg = hat[np.ix_(rows, rows)]
        values, vectors = np.linalg.eigh(np.eye(rows.size) - h_gg)
        root = vectors @ np.diag(1 / np.sqrt(np.clip(values, 1e-12, None))) @ vectors.T
        a_g = root @ design[rows] @ bread @ ell
        column = -(hat[:, rows] @ a_g)
        column[rows] += a_g
        columns.append(column)
    g_matrix = np.column_stack(columns)
    eigen = np.clip(np.linalg.eigvalsh(g_matrix.T @ omega @ g_matrix), 0, None)
    return eigen.sum() ** 2 / (eigen**2).sum()


@pytest.mark.parametrize("nested", [True, False])
def test_the_degrees_of_freedom_are_those_of_the_definition(nested):
    rng = np.random.default_rng(7)
    k = 12
    sizes = _unequal(rng, k)
    codes = np.repeat(np.arange(k), sizes)
    if nested:
        marks = (codes % 2).astype(float)
    else:
        marks = rng.integers(0, 2, size=codes.size).astype(float)
    y = 0.3 * marks + rng.normal(0, 0.6, k)[codes] + rng.normal(0, 1, codes.size)
    design = np.column_stack([np.ones_like(y), marks])
    fit = _fit(design, y, codes)
    ell = np.array([0.0, 1.0])
    residuals = y - design @ fit.beta
    within, between = residual_components([residuals[codes == g] for g in range(k)])
    assert between > 0
    _, _, df_identity = fit.contrast(ell)
    _, _, df_random = fit.contrast(ell, random_effects=True)
    assert df_identity == pytest.approx(_by_definition(design, y, codes, ell, 1.0, 0.0))
    assert df_random == pytest.approx(_by_definition(design, y, codes, ell, within, between))
    assert df_random != pytest.approx(df_identity, rel=1e-3)


def test_the_variance_components_are_reml_on_balanced_data():
    rng = np.random.default_rng(11)
    k, size = 30, 8
    codes = np.repeat(np.arange(k), size)
    y = rng.normal(0, 0.7, k)[codes] + rng.normal(0, 1.2, k * size)
    within, between = residual_components([y[codes == g] for g in range(k)])
    frame = pd.DataFrame({"y": y, "g": codes})
    reml = smf.mixedlm("y ~ 1", frame, groups=frame["g"]).fit(reml=True)
    assert within == pytest.approx(reml.scale, rel=1e-4)
    assert between == pytest.approx(float(reml.cov_re.iloc[0, 0]), rel=1e-3)


def test_the_components_are_zero_where_they_cannot_be_told_apart():
    assert residual_components([np.array([1.0, 2.0])]) == (0.0, 0.0)
    singletons = [np.array([v]) for v in (0.1, 0.5, 0.9)]
    assert residual_components(singletons) == (0.0, 0.0)
    # Negative ANOVA estimates are truncated at zero: clusters less alike than chance.
    alike = [np.array([0.0, 1.0]), np.array([0.0, 1.0]), np.array([0.0, 1.0])]
    assert residual_components(alike)[1] == 0.0


def test_nested_means_each_cluster_in_one_condition():
    codes = np.array([0, 0, 1, 1, 2, 2])
    assert _nested(np.array([0.0, 0, 1, 1, 0, 0]), codes)
    assert not _nested(np.array([0.0, 1, 1, 1, 0, 0]), codes)


def test_a_nested_design_with_cluster_effects_gets_fewer_degrees_of_freedom_and_a_wider_interval():
    """Imbens & Kolesár 2016 §IV: with a cluster-level regressor and unequal clusters, the
    independence working model overstates the degrees of freedom."""
    rng = np.random.default_rng(3)
    k = 20
    sizes = np.where(np.arange(k) % 5 == 0, 60, 2)
    codes = np.repeat(np.arange(k), sizes)
    marks = (codes % 2).astype(float)
    y = 0.5 * marks + rng.normal(0, 1.0, k)[codes] + rng.normal(0, 0.5, codes.size)
    result = clustered_difference(y, marks, codes)
    assert result.method.endswith("(degrees of freedom under the random-effects working model)")
    crossed = clustered_difference(y, rng.integers(0, 2, size=y.size), codes)
    assert "random-effects" not in crossed.method
    fit = _fit(np.column_stack([np.ones_like(y), marks]), y, codes)
    _, se, df_identity = fit.contrast([0.0, 1.0])
    assert result.df < df_identity
    assert result.standard_error == pytest.approx(se)
    half = (result.interval[1] - result.interval[0]) / 2
    assert half == pytest.approx(t_distribution.ppf(0.975, result.df) * se)
    assert half > t_distribution.ppf(0.975, df_identity) * se
