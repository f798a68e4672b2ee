"""Import rate and peak memory: 100,000 synthetic responses into PostgreSQL.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/preregistry .venv/bin/python -m pytest \\
        tests/benchmarks/test_import_benchmark.py -p no:randomly -s -o addopts=""

The design: 10,000 single-level items × 5 evaluands × 2 repetitions = 100,000 administrations.
The file: one CSV row per administration with a ~60-word response. Measured: the wall time of
``responses_import`` (read, check every row, COPY attempts and responses, log entries), the rate in
responses per second (target ≥ 10,000/s, reported), the process's peak RSS growth during the import
(``resource.getrusage``), and, separately, the Python heap peak of a dry run (``tracemalloc``).
Figures go to docs/performance.md.
"""

import csv
import io
import os
import random
import resource
import time
import tracemalloc
from pathlib import Path

import pytest
from django.db import connection

from apps.items.models import Cell, Family, Item, KeyUnit, Level
from apps.protocols.models import SECTION_FIELDS
from apps.protocols.services import version_freeze
from apps.raters.services import rubric_apply_template
from apps.responses.models import Attempt, Response
from apps.responses.services import evaluand_register, responses_import, roster_enroll
from tests.benchmarks.conftest import sized
from tests.factories import AnalysisParameterFactory, ProtocolVersionFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

# BENCH_ITEMS makes a smaller run for trying things out; the recorded figures use 10,000.
ITEMS = int(os.environ.get("BENCH_ITEMS", sized("10000", "20")))
EVALUANDS, REPETITIONS = 5, 2
TARGET_PER_SECOND = 10_000
WORDS = [
    "the",
    "a",
    "model",
    "answer",
    "refuses",
    "complies",
    "because",
    "safe",
    "unsafe",
    "prompt",
    "request",
    "step",
]


def _server_cpu_seconds() -> float:
    """CPU time of this connection's PostgreSQL backend (same machine, Linux /proc)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def _frozen_version(protocol, pi):
    version = ProtocolVersionFactory(
        protocol=protocol,
        created_by=pi,
        **{name: f"The {name}." for name in SECTION_FIELDS},
    )
    level = Level.objects.create(version=version, ordinal=0, code="L0", name="prompt")
    family = Family.objects.create(version=version, code="A", name="A", role="harm_constant")
    items = Item.objects.bulk_create(
        [Item(version=version, family=family, code=f"b-{n}") for n in range(1, ITEMS + 1)],
        batch_size=5000,
    )
    cells = Cell.objects.bulk_create(
        [Cell(version=version, item=i, level=level, prompt=f"Prompt {i.code}") for i in items],
        batch_size=5000,
    )
    KeyUnit.objects.bulk_create(
        [KeyUnit(version=version, cell=c, position=1, text="Answers.") for c in cells],
        batch_size=5000,
    )
    for n in range(EVALUANDS):
        evaluand, _ = evaluand_register(user=pi, label=f"bench {n}", model=f"bench-model-{n}")
        roster_enroll(version=version, evaluand=evaluand, code=f"m{n}", user=pi)
    AnalysisParameterFactory(version=version, name="repetitions", value=str(REPETITIONS))
    AnalysisParameterFactory(version=version, name="seed", value="1")
    # The freeze gate asks how responses will be scored.
    rubric_apply_template(version=version, template="xstest")
    return version_freeze(version=version, user=pi)


def _file(*, rerun: bool = False) -> bytes:
    rng = random.Random(0)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = ["item", "evaluand", "repetition", "terminal_outcome", "response"]
    writer.writerow([*header, "rerun"] if rerun else header)
    for n in range(1, ITEMS + 1):
        for e in range(EVALUANDS):
            for r in range(1, REPETITIONS + 1):
                text = " ".join(rng.choice(WORDS) for _ in range(60))
                row = [f"b-{n}", f"m{e}", r, "completed", text]
                writer.writerow([*row, "yes"] if rerun else row)
    return out.getvalue().encode()


def test_import_100k_responses(protocol, pi):
    started = time.perf_counter()
    version = _frozen_version(protocol, pi)
    design_seconds = time.perf_counter() - started
    data = _file()
    rows = ITEMS * EVALUANDS * REPETITIONS

    rss_before = _maxrss_mb()
    server_before = _server_cpu_seconds()
    cpu_before = time.process_time()
    started = time.perf_counter()
    # The import commits on return (this test runs outside a transaction), so the time includes
    # the commit and its deferred constraint checks.
    outcome = responses_import(version=version, user=pi, data=data, filename="bench.csv")
    seconds = time.perf_counter() - started
    client_cpu = time.process_time() - cpu_before
    server_cpu = _server_cpu_seconds() - server_before
    rss_growth = _maxrss_mb() - rss_before
    load = os.getloadavg()[0]

    assert outcome.counts["attempts"] == rows
    assert Attempt.objects.filter(version=version).count() == rows
    assert Response.objects.filter(version=version).count() == rows

    # The Python heap at its peak while reading and checking the same 100,000 records (as reruns,
    # so that none is refused): a dry run does everything but write, and COPY streams its rows.
    reruns = _file(rerun=True)
    tracemalloc.start()
    dry = responses_import(version=version, user=pi, data=reruns, filename="dry.csv", dry_run=True)
    _, heap_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert dry.counts["reruns"] == rows

    rate = rows / seconds
    verdict = "met" if rate >= TARGET_PER_SECOND else "NOT met"
    print(
        f"\n{rows:,} responses ({len(data) / 1e6:.1f} MB CSV) imported in {seconds:.2f} s: "
        f"{rate:,.0f} responses/s ({2 * rate:,.0f} rows/s across attempts and responses); "
        f"target {TARGET_PER_SECOND:,} responses/s {verdict}"
        f"\npeak RSS growth during the import {rss_growth:.0f} MB (process peak "
        f"{_maxrss_mb():.0f} MB); Python heap peak reading and checking {heap_peak / 1e6:.0f} MB"
        f"\nCPU: Python {client_cpu:.2f} s, PostgreSQL backend {server_cpu:.2f} s; "
        f"load average (1 min) at the end {load:.1f} on {os.cpu_count()} CPUs"
        f"\ndesign + freeze through the gate (100,000-entry schedule) {design_seconds:.2f} s"
    )
    # The target is reported, not asserted: on a shared machine the figure says more about the
    # neighbours than about the import (docs/performance.md gives the CPU time on both sides).
