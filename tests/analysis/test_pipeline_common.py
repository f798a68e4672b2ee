"""The pieces the kinds' pipelines share (``apps.analysis.pipelines.common``): pure, no database."""

import numpy as np

from apps.analysis.pipelines.common import estimate_cell
from apps.analysis.stats.comparison import clustered_mean
from apps.analysis.stats.proportions import rate_interval


def test_a_means_cell_has_the_shape_of_a_rates_cell():
    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, 60).astype(float)
    clusters = np.repeat(np.arange(12), 5)
    rate = rate_interval(y, clusters, confidence=0.95, min_clusters=6).as_cell()
    mean = clustered_mean(y, clusters, confidence=0.95, min_clusters=10)
    cell = estimate_cell(mean, n=mean.n)
    assert set(cell) == set(rate) - {"note"}
    assert cell["estimate"] == mean.estimate
    assert cell["interval"] == [float(mean.interval[0]), float(mean.interval[1])]
    assert (cell["n"], cell["n_items"], cell["interval_method"]) == (60, 12, mean.method)


def test_a_cell_without_an_interval_says_why():
    y = np.array([1.0, 0.0, 1.0, 1.0])
    mean = clustered_mean(y, np.array([0, 1, 2, 3]), confidence=0.95, min_clusters=10)
    cell = estimate_cell(mean, n=mean.n)
    assert cell["interval"] is None
    assert cell["note"] == mean.note != ""
