"""Benchmark: a whole OPB-01-sized analysis run, and the real XSTest run, collect + compute.

OPB-01-sized: 8 domains (one item per domain and family) × 6 levels × 2 families (Family B
authored to L3, its L4–L5 recorded absent) × 4 evaluands × 5 repetitions = 1,600 administered
responses, each scored by 2 reviewers, synthetic scores from a seeded generator; the plan's
10,000 bootstrap replicates. Timed end to end through the run machinery (claim, collect,
canonical inputs, compute, canonical result, blobs): ``analysis_run_perform``; then once more
under cProfile to split the compute by statistic. Not part of the default run.

    DATABASE_URL=postgres://… .venv/bin/python -m pytest \
        tests/benchmarks/test_analysis_benchmark.py -s -p no:cacheprovider --override-ini addopts=

Results and the machine they came from are recorded in docs/performance.md.
"""

import cProfile
import json
import platform
import pstats
import time

import pytest

from apps.analysis.models import RunState
from apps.analysis.pipelines import get_pipeline
from apps.analysis.services import analysis_run_perform, analysis_run_request
from apps.core.canonical import canonical_json
from tests.benchmarks.conftest import sized
from tests.factories import opb_study, xstest_study

pytestmark = pytest.mark.django_db

RUNS = int(sized("3", "1"))
REPLICATES = sized("10000", "50")
STATISTICS = (
    "beta_cluster_bootstrap",
    "family_cluster_bootstrap",
    "op_ratio",
    "fit_beta_regression",
    "fit_mixed_logit",
    "fit_gee_logit",
    "krippendorff_alpha",
    "label_rates",
)


def _timed_run(study) -> tuple[float, object]:
    run = analysis_run_request(version=study.version, user=study.pi)
    start = time.perf_counter()
    outcome = analysis_run_perform(run_id=run.pk)
    elapsed = time.perf_counter() - start
    run.refresh_from_db()
    assert outcome == "succeeded" and run.state == RunState.SUCCEEDED, run.error
    return elapsed, run


def _split(pipeline, version, run) -> dict:
    start = time.perf_counter()
    inputs = json.loads(canonical_json(pipeline.collect(version)))
    collect = time.perf_counter() - start
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    pipeline.compute(inputs, parameters=run.parameters, seed=run.seed)
    profile.disable()
    compute = time.perf_counter() - start
    by_name = {}
    for (_, _, name), row in pstats.Stats(profile).stats.items():
        if name in STATISTICS:
            by_name[name] = by_name.get(name, 0.0) + row[3]  # cumulative time
    return {"collect": collect, "compute (profiled)": compute, **by_name}


def _report(title, timings, run, split):
    print(f"\n{title}")
    print(f"  machine: {platform.machine()}, python {platform.python_version()}")
    print(f"  end to end, {len(timings)} runs: " + ", ".join(f"{t:.2f} s" for t in timings))
    print(f"  inputs {run.inputs.size:,} bytes, result {run.result.size:,} bytes")
    for name, seconds in split.items():
        print(f"  {name:28s} {seconds:7.2f} s")


@pytest.mark.postgres
def test_a_whole_opb01_sized_run(django_capture_on_commit_callbacks):
    study = opb_study(
        code="OPB-BENCH",
        evaluands=int(sized("4", "2")),
        items_per_family=int(sized("8", "2")),
        repetitions=int(sized("5", "1")),
        parameters={"bootstrap_replicates": REPLICATES},
    )
    assert study.counts["administrations"] == int(sized("1600", "40"))
    timings, results = [], set()
    for _ in range(RUNS):
        elapsed, run = _timed_run(study)
        timings.append(elapsed)
        results.add(run.result_sha256)
    assert len(results) == 1  # every rerun gave the same bytes
    split = _split(get_pipeline("opb"), study.version, run)
    _report("OPB-01-sized run (1,600 responses, 10,000 replicates)", timings, run, split)


@pytest.mark.postgres
@pytest.mark.shared_data
def test_the_xstest_run(shared_data):
    study = xstest_study(shared_data / "xstest", replicates=REPLICATES)
    timings = []
    for _ in range(RUNS):
        elapsed, run = _timed_run(study)
        timings.append(elapsed)
    split = _split(get_pipeline("xstest"), study.version, run)
    _report("XSTest run (2,250 responses, 4,500 + scores, 10,000 replicates)", timings, run, split)
