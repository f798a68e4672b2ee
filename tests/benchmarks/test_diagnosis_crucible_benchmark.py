"""Benchmark: the design diagnosis of the CRUCIBLE demo's draft (issue #35 §4; no target is set
for CRUCIBLE: the figure is recorded so the PI knows what a diagnosis of a seed-001-sized design
costs).

The draft is the demo's whole (``apps.demo.crucible.crucible_draft``: 3 evaluands, 4 rungs, 15
families × 3 seeds, 12 axes, 3 hard-fail channels, 540 episodes, its allocation, 3 acceptance
policies and 2 confirmatory comparisons) and the crucible world's defaults. Timed:
``diagnose_version``, the whole loop with the world's fast path (999 replicates, no §9.2
models); then one simulation under cProfile. ``DIAGNOSIS_BENCH_SIMS`` overrides the number of
simulations (default 20).

    DATABASE_URL=postgres://… DIAGNOSIS_BENCH_SIMS=20 .venv/bin/python -m pytest \
        tests/benchmarks/test_diagnosis_crucible_benchmark.py -s -p no:cacheprovider \
        --override-ini addopts=

Results and the machine they came from are recorded in docs/performance.md.
"""

import cProfile
import os
import pstats
import time

import pytest

from apps.analysis.diagnosis.engine import diagnose_version
from apps.demo.crucible import crucible_draft
from tests.benchmarks.conftest import sized
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

SIMS = int(os.environ.get("DIAGNOSIS_BENCH_SIMS") or sized("20", "2"))


def test_crucible_demo_diagnosis():
    draft, _ = crucible_draft(user=UserFactory(), code="CRU-BENCH")
    start = time.perf_counter()
    document = diagnose_version(version=draft, world={}, sims=SIMS, seed=1)
    elapsed = time.perf_counter() - start
    point = document["points"][0]
    per_sim = elapsed / SIMS
    print(
        f"\nCRUCIBLE demo diagnosis: {point['administrations']} administrations, "
        f"{len(point['estimates'])} estimates, {SIMS} simulations in {elapsed:.1f} s "
        f"({per_sim:.2f} s each; 500 would take {per_sim * 500:.0f} s); "
        f"load average {os.getloadavg()}"
    )
    profile = cProfile.Profile()
    profile.enable()
    diagnose_version(version=draft, world={}, sims=1, seed=2)
    profile.disable()
    pstats.Stats(profile).sort_stats("cumulative").print_stats(12)
    assert point["sims"] == SIMS
