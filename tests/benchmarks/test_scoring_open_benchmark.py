"""Benchmark: opening scoring for 100,000 responses on PostgreSQL (target ≤ 5 s).

Not part of the default run. Reproduce (figure in docs/performance.md):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/prereg_queue \\
      .venv/bin/python -m pytest -o addopts="" -p no:cacheprovider -s \\
      tests/benchmarks/test_scoring_open_benchmark.py

The study (one version, 100 cells, ``BENCH_OPEN_RESPONSES`` responses, default 100,000) is
written by bare SQL; only ``scoring_open`` is timed: reading the responses that need tasks, the
keyed-hash shuffle keys, and one set-based INSERT per 50,000 responses, k = 2 tasks each.
"""

import json
import os
import time
from pathlib import Path

import pytest
from django.db import connection

from apps.raters.models import ScoringTask
from apps.raters.services import scoring_open
from tests.benchmarks.conftest import sized
from tests.factories import MembershipFactory, bulk_scoring_study

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

RESPONSES = int(os.environ.get("BENCH_OPEN_RESPONSES", sized("100000", "200")))
K = 2


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_scoring_open_for_100000_responses():
    version = bulk_scoring_study(responses=RESPONSES, scores_per_response=K)
    pi = MembershipFactory(protocol=version.protocol, role="pi").user
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    load_before = os.getloadavg()
    cpu_before = time.process_time(), _cpu_seconds(backend)
    started = time.perf_counter()
    created = scoring_open(version=version, user=pi)
    seconds = time.perf_counter() - started
    # CPU time, ours and the PostgreSQL backend's: on two cores shared with other work the wall
    # time is mostly waiting for a core, the CPU time is what opening costs.
    python_cpu = time.process_time() - cpu_before[0]
    database_cpu = _cpu_seconds(backend) - cpu_before[1]
    assert created == RESPONSES * K
    again = time.perf_counter()
    assert scoring_open(version=version, user=pi) == 0  # idempotent: nothing new
    repeat_seconds = time.perf_counter() - again
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(DISTINCT (response_id, slot)), count(DISTINCT response_id), "
            "count(token) FROM raters_scoringtask WHERE version_id = %s",
            [version.pk],
        )
        slots, responses, tokens = cursor.fetchone()
    # k tasks per response, none with a token yet (a task gets one when first reserved).
    assert slots == RESPONSES * K and responses == RESPONSES and tokens == 0
    assert not ScoringTask.objects.filter(version=version).exclude(state="open").exists()
    print(
        "\nSCORING OPEN BENCHMARK "
        + json.dumps(
            {
                "responses": RESPONSES,
                "tasks_created": created,
                "scoring_open_s": round(seconds, 2),
                "python_cpu_s": round(python_cpu, 2),
                "database_backend_cpu_s": round(database_cpu, 2),
                "reopen_with_nothing_new_s": round(repeat_seconds, 2),
                "load_before": [round(x, 2) for x in load_before],
                "load_after": [round(x, 2) for x in os.getloadavg()],
            }
        )
    )
