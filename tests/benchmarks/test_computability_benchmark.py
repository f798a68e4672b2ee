"""Benchmark of the computability gate (issue #12 §5): at most 10 s for an OPB-01-sized design.

The design is the demo's OPB-01 design (what ``load_demo`` freezes: families A, B, C and the
force arm, absent cells, the roster, the OPB rubric) with v1.1's §7 values (5 repetitions).
Each run clears the verdict cache first, so it builds the synthetic data and runs the pipeline.
Not part of the default run (pyproject's addopts ignore tests/benchmarks):

    .venv/bin/python -m pytest tests/benchmarks/test_computability_benchmark.py -s -o addopts=""

(with ``DATABASE_URL=postgres://…`` for the PostgreSQL figure). Results and the load average go
into docs/performance.md.
"""

import os
import statistics
import time

import pytest
from django.core.cache import cache

from apps.analysis.computability import version_computability
from tests.analysis.test_computability import opb01  # noqa: F401  (the fixture)
from tests.benchmarks.conftest import meets

pytestmark = pytest.mark.django_db

RUNS = 3


def test_the_gate_checks_an_opb01_sized_design_within_ten_seconds(opb01):  # noqa: F811
    draft, _ = opb01
    runs = []
    for _ in range(RUNS):
        cache.clear()
        start = time.perf_counter()
        verdict = version_computability(version=draft)
        runs.append(time.perf_counter() - start)
    assert verdict.problems == []
    load = os.getloadavg()
    print(
        f"\ncomputability gate, OPB-01 design ({verdict.administrations} synthetic "
        f"administrations of {verdict.planned} planned{'; ' + verdict.note if verdict.note else ''}"
        f"): median {statistics.median(runs):.2f} s (min {min(runs):.2f}, max "
        f"{max(runs):.2f}); load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    assert meets(statistics.median(runs), at_most=10.0)
