"""Benchmark of the computability gate (issues #12 §5 and #32 §2): at most 10 s on a quiet
machine for every seed design and for a 25,000-administration design.

The designs, each built as a draft through the services (the 25,000-administration one with
bulk inserts for its 12,500 items):

- ``opb01``: the demo's OPB-01 design with v1.1's §7 values (seed 000);
- ``crucible``: the demo's CRUCIBLE draft (seed 001);
- ``route_choice_64``: seed 002's natural layout, 64 task fixtures per sub-study, one task block
  each (8 repetitions), 2 models, 2,096 administrations;
- ``xstest_25000``: an XSTest-shaped refusal study, 12,500 prompts (two prompt types) × 2 models.

Each run clears the verdict cache first, so it builds the synthetic data and runs the pipeline
(the gate's own sample of the design, whose size it prints). Not part of the default run
(pyproject's addopts ignore tests/benchmarks):

    .venv/bin/python -m pytest tests/benchmarks/test_computability_benchmark.py \
        -p no:randomly -s -o addopts=""
    BENCHMARK_SIZE=tiny .venv/bin/python -m pytest \
        tests/benchmarks/test_computability_benchmark.py -p no:randomly -s -o addopts=""

(with ``DATABASE_URL=postgres://…`` for the PostgreSQL figure). Results and the load average go
into docs/performance.md. At ``BENCHMARK_SIZE=tiny`` each design is measured once and the
XSTest-shaped one has 200 prompts; those figures mean nothing.
"""

import os
import statistics
import time

import pytest
from django.core.cache import cache

from apps.analysis.computability import version_computability
from tests.analysis.test_computability import opb01  # noqa: F401  (the fixture)
from tests.benchmarks.conftest import TINY, meets, sized
from tests.factories import UserFactory, xstest_shaped_draft

pytestmark = pytest.mark.django_db

RUNS = 1 if TINY else 3
PROMPTS = int(sized("12500", "200"))


def _measure(name: str, draft) -> None:
    runs = []
    for _ in range(RUNS):
        cache.clear()
        start = time.perf_counter()
        verdict = version_computability(version=draft)
        runs.append(time.perf_counter() - start)
    assert verdict.problems == [], verdict.problems
    load = os.getloadavg()
    print(
        f"\ncomputability gate, {name} ({verdict.administrations} synthetic administrations of "
        f"{verdict.planned} planned{'; ' + verdict.note if verdict.note else ''}): median "
        f"{statistics.median(runs):.2f} s (min {min(runs):.2f}, max {max(runs):.2f}); load "
        f"average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    assert meets(statistics.median(runs), at_most=10.0)


def test_the_gate_checks_an_opb01_sized_design_within_ten_seconds(opb01):  # noqa: F811
    draft, _ = opb01
    _measure("OPB-01 design (seed 000)", draft)


def test_the_gate_checks_the_crucible_design_within_ten_seconds():
    from apps.demo.crucible import crucible_draft

    draft, _ = crucible_draft(user=UserFactory(), code="CRU-BENCH")
    _measure("CRUCIBLE design (seed 001)", draft)


def test_the_gate_checks_seed_002s_natural_layout_within_ten_seconds(monkeypatch):
    from apps.demo import route_choice

    tiny = {"min_task_blocks": "16", "repetitions": "16"}  # 8 tasks, 2 blocks each
    monkeypatch.setattr(route_choice, "TASKS_PER_SUB_STUDY", 8 if TINY else 64)
    draft = route_choice.route_choice_draft(
        user=UserFactory(),
        code="ROUTE-BENCH",
        parameters=tiny if TINY else {"repetitions": "8"},
    )
    _measure("seed 002, 64 fixtures per sub-study, one block each", draft)


def test_the_gate_checks_a_25000_administration_design_within_ten_seconds():
    draft = xstest_shaped_draft(PROMPTS)
    _measure(f"XSTest-shaped, {PROMPTS} prompts × 2 models", draft)
