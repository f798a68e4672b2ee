"""Benchmarks of the study design: generating an administration schedule, and importing a
design file. Not part of the default run (pyproject's addopts ignore tests/benchmarks).

    .venv/bin/python -m pytest tests/benchmarks/test_design_benchmark.py -s -o addopts=""

(with ``DATABASE_URL=postgres://…`` for the PostgreSQL figures).

Results and the machine they came from are recorded in docs/performance.md.
"""

import statistics
import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.items import services
from apps.items.models import Cell
from apps.items.schedule import COUNTERBALANCED, DESIGN, FactorSpec, administration_schedule
from tests.benchmarks.conftest import meets
from tests.factories import ProtocolVersionFactory

RUNS = 5


def _timed(call):
    runs = []
    for _ in range(RUNS):
        start = time.perf_counter()
        result = call()
        runs.append(time.perf_counter() - start)
    return result, runs


def test_schedule_of_40000_administrations_within_three_seconds():
    cells = [(f"item-{i:03d}", f"L{level}") for i in range(40) for level in range(5)]
    strata = {cell: cell[1] for cell in cells}
    evaluands = [f"model-{n:02d}" for n in range(20)]
    schedule, runs = _timed(
        lambda: administration_schedule(
            cells=cells, evaluands=evaluands, repetitions=10, seed=1, strata=strata
        )
    )
    assert len(schedule) == 200 * 20 * 10
    print(
        f"\nschedule, 200 cells × 20 evaluands × 10 repetitions: median "
        f"{statistics.median(runs):.3f} s (min {min(runs):.3f}, max {max(runs):.3f})"
    )
    assert meets(statistics.median(runs), at_most=3.0)


def test_seed_002_factorial_schedule():
    factors = [
        FactorSpec("friction", ("low", "high"), DESIGN),
        FactorSpec("alternate_route", ("present", "absent"), DESIGN),
        FactorSpec("framing", ("safety", "quality"), DESIGN),
        FactorSpec("tool_names", ("names-1", "names-2"), COUNTERBALANCED),
        FactorSpec("presentation_order", ("route-first", "task-first"), COUNTERBALANCED),
    ]
    tasks = [(f"task-{i:02d}", "L0") for i in range(64)]
    schedule, runs = _timed(
        lambda: administration_schedule(
            cells=tasks,
            evaluands=[f"m{n}" for n in range(8)],
            repetitions=8,
            seed=2,
            factors=factors,
        )
    )
    assert len(schedule) == 64 * 8 * 8
    print(
        f"\nseed 002, 64 task blocks × 8 models × 8 design cells: median "
        f"{statistics.median(runs):.3f} s"
    )


@pytest.mark.django_db
def test_import_of_a_1200_row_design_file():
    version = ProtocolVersionFactory()
    services.level_scale_default_create(version=version)
    services.family_create(version=version, code="A", name="A", role="other")
    rows = ["family,item,domain,level,prompt,key"]
    for i in range(200):
        for level in range(6):
            rows.append(
                f'A,a-{i:03d},domain {i % 8},L{level},"Prompt {i} at level {level}",'
                f'"unit one | unit two | !step three"'
            )
    content = ("\n".join(rows) + "\n").encode()

    start = time.perf_counter()
    plan = services.design_import_plan(version=version, content=content, fmt="csv")
    dry_run = time.perf_counter() - start
    assert plan.ok

    with CaptureQueriesContext(connection) as queries:
        start = time.perf_counter()
        services.design_import(version=version, content=content, fmt="csv")
        imported = time.perf_counter() - start
    assert Cell.objects.filter(version=version).count() == 1200
    print(
        f"\ndesign import, 1,200 rows, {connection.vendor}: dry run {dry_run:.2f} s, "
        f"import {imported:.2f} s ({len(queries)} queries)"
    )
