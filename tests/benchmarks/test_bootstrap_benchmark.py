"""Benchmark: family-clustered bootstrap, 10,000 replicates over 50,000 observations in 500
clusters. Not part of the default run (pyproject's addopts ignore tests/benchmarks).

    .venv/bin/python -m pytest tests/benchmarks/test_bootstrap_benchmark.py -p no:django -s

Results and the machine they came from are recorded in docs/performance.md.
"""

import platform
import statistics
import time
import tracemalloc

import numpy as np

from apps.analysis.stats.bootstrap import family_cluster_bootstrap
from tests.benchmarks.conftest import meets, sized

N_OBSERVATIONS = int(sized("50000", "500"))
N_CLUSTERS = int(sized("500", "20"))
REPLICATES = int(sized("10000", "100"))
RUNS = 5
TARGET_SECONDS = 2.0


def test_family_cluster_bootstrap_runs_10000_replicates_within_two_seconds():
    rng = np.random.default_rng(0)
    clusters = rng.integers(0, N_CLUSTERS, size=N_OBSERVATIONS)
    values = rng.beta(2.0, 5.0, size=N_OBSERVATIONS) + 0.01 * clusters / N_CLUSTERS

    timings = {}
    for aggregation in ("cluster_mean", "observation"):
        runs = []
        for run in range(RUNS):
            start = time.perf_counter()
            result = family_cluster_bootstrap(
                values, clusters, seed=run, replicates=REPLICATES, aggregation=aggregation
            )
            runs.append(time.perf_counter() - start)
        assert result.interval_available and result.n_clusters == N_CLUSTERS
        timings[aggregation] = runs

    # A separate run for memory: tracemalloc sees numpy's allocations but slows timing.
    tracemalloc.start()
    family_cluster_bootstrap(values, clusters, seed=0, replicates=REPLICATES)
    peak_mib = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()

    print(
        f"\nfamily_cluster_bootstrap: {N_OBSERVATIONS} observations, {N_CLUSTERS} clusters, "
        f"{REPLICATES} replicates, {RUNS} runs each"
        f"\nPython {platform.python_version()}, numpy {np.__version__}"
    )
    for aggregation, runs in timings.items():
        print(
            f"  {aggregation:>12}: median {statistics.median(runs):.3f} s, "
            f"min {min(runs):.3f} s, max {max(runs):.3f} s"
        )
    print(f"  peak traced memory (cluster_mean): {peak_mib:.0f} MiB")
    for aggregation, runs in timings.items():
        assert meets(statistics.median(runs), at_most=TARGET_SECONDS), aggregation
