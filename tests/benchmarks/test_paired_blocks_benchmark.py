"""Benchmark: the ``paired_blocks`` pipeline (seed 002) on 2 models × 2 sub-studies × 64 task
blocks × 8 conditions with 10,000 bootstrap replicates. Target: ≤ 10 s for assemble + compute.
Not part of the default run (pyproject's addopts ignore tests/benchmarks).

    .venv/bin/python -m pytest tests/benchmarks/test_paired_blocks_benchmark.py \
        -p no:randomly -s -o addopts=""

Results and the machine they came from are recorded in docs/performance.md.
"""

import os
import statistics
import time

from apps.analysis.pipelines import get_pipeline
from tests.benchmarks.conftest import meets, sized
from tests.factories import parameters, route_raw

ROUNDS = int(sized("8", "2"))  # × 8 tasks per sub-study: 64 task blocks per model (16 tiny)
REPLICATES = sized("10000", "200")
RUNS = 3
TARGET_SECONDS = 10.0


def test_paired_blocks_analyses_two_models_two_sub_studies_64_blocks_within_ten_seconds():
    pipeline = get_pipeline("paired_blocks")
    params = parameters(
        bootstrap_replicates=REPLICATES, min_task_blocks=str(ROUNDS * 8), controls="[]"
    )
    raw = route_raw(rounds=ROUNDS, planted={"friction": 0.2}, controls=False, params=params)
    n = len(raw["task_blocks"]["administrations"])
    timings = []
    for run in range(RUNS):
        start = time.perf_counter()
        inputs = pipeline.assemble(raw)
        result = pipeline.compute(inputs, parameters=params, seed=run)
        timings.append(time.perf_counter() - start)
    contrasts = result["contrasts"]
    assert {r["n_blocks"] for r in contrasts} == {ROUNDS * 8}
    assert len({(r["evaluand"], r["sub_study"]) for r in contrasts}) == 4
    median = statistics.median(timings)
    print(
        f"\npaired_blocks: {n} administrations (2 models × 2 sub-studies × {ROUNDS * 8} blocks × "
        f"8 conditions), {len(contrasts)} contrasts, {REPLICATES} replicates: median "
        f"{median:.2f} s of {RUNS} runs (range {min(timings):.2f}–{max(timings):.2f} s); "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    assert meets(median, at_most=TARGET_SECONDS), f"median {median:.2f} s > {TARGET_SECONDS} s"
