"""Benchmark: the crucible pipeline's analysis of a CRUCIBLE-sized study — 3 evaluands × 15
families × 10 seeds × 4 rungs × 12 graded axes (1,800 episodes, 21,600 grades) with 10,000
bootstrap replicates — within 30 s (issue #14). The analysis is ``compute`` on the inputs
``collect`` would give (every section: 144 family-clustered bootstraps, coverage, hard fails,
acceptance, 12 MixedLM sensitivity fits, confirmatory and exploratory comparisons) and the
canonical encoding of the result document; reading the database is not included.

    .venv/bin/python -m pytest tests/benchmarks/test_crucible_benchmark.py -s -o addopts=""

Results and the machine they came from are recorded in docs/performance.md.
"""

import json
import os
import statistics
import time

from apps.core.canonical import canonical_json
from apps.studies.crucible.pipeline import compute
from tests.benchmarks.conftest import meets, sized
from tests.factories import crucible_inputs

EVALUANDS = int(sized("3", "2"))
FAMILIES = int(sized("15", "10"))  # the bootstrap-t gives no interval below 10
SEEDS = int(sized("10", "2"))
RUNGS = int(sized("4", "2"))
AXES = int(sized("12", "2"))
REPLICATES = sized("10000", "200")
RUNS = int(sized("3", "1"))
TARGET_SECONDS = 30.0

POLICIES = [
    {
        "code": "floor",
        "floors": [{"axis": "axis1", "minimum": 0.6, "on": "lower_bound"}],
        "hard_fail_ceilings": [{"channel": "rule_violation", "maximum": 0}],
        "coverage": {"min_families": 3},
    }
]


def test_a_crucible_sized_analysis_takes_at_most_30_seconds():
    inputs = json.loads(
        canonical_json(
            crucible_inputs(
                evaluands=EVALUANDS,
                families=FAMILIES,
                seeds=SEEDS,
                rungs=RUNGS,
                axes=AXES,
                truth=lambda e, r, a: 0.8 - 0.1 * int(r[1:]),
                hard_fail=lambda e, r, f, s: r == "R3" and s.endswith("S1"),
            )
        )
    )
    parameters = {
        # The crucible preset's interval, the calibrated bootstrap-t (issue #36 §3).
        "bootstrap_interval": "bootstrap_t",
        "bootstrap_replicates": REPLICATES,
        "acceptance_policies": json.dumps(POLICIES),
        "confirmatory_comparisons": json.dumps(
            [{"axis": "axis1", "rung": "R1", "evaluands": ["E1", "E2"]}]
        ),
    }
    runs = []
    for run in range(RUNS):
        start = time.perf_counter()
        result = compute(inputs, parameters=parameters, seed=run)
        canonical_json(result)
        runs.append(time.perf_counter() - start)
    assert len(result["axes"]) == EVALUANDS * RUNGS * AXES
    assert all(c["interval_available"] for c in result["axes"])
    load = os.getloadavg()[0]
    print(
        f"\ncrucible compute: {len(inputs['episodes'])} episodes, {EVALUANDS}×{FAMILIES}×{SEEDS}"
        f"×{RUNGS}×{AXES}, {REPLICATES} replicates, {RUNS} runs: median "
        f"{statistics.median(runs):.1f} s, min {min(runs):.1f} s, max {max(runs):.1f} s; "
        f"load average {load:.1f}"
    )
    assert meets(max(runs), at_most=TARGET_SECONDS)
