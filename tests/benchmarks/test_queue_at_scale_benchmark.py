"""Benchmark: ten million scoring tasks — ``scoring_open`` for 1,000,000 responses, then the
single-reviewer next/score latency with the task table at 10,000,000 rows (issue #38, point 5).

Not part of the default run. Reproduce (figures in docs/performance.md, "Ten million tasks"):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/prereg_queue \\
      .venv/bin/python -m pytest -o addopts="" -p no:cacheprovider -s \\
      tests/benchmarks/test_queue_at_scale_benchmark.py

Sizes (environment): ``BENCH_OPEN_RESPONSES`` responses in the study whose opening is timed
(default 1,000,000; k = 2, so twice as many tasks), and ``BENCH_TOTAL_TASKS`` task rows in the
table when the queue is timed (default 10,000,000): a second study of
``(BENCH_TOTAL_TASKS − 2 × BENCH_OPEN_RESPONSES) / 2`` responses, k = 2, makes up the rest. Both
studies are written by SQL (``tests.factories.bulk_scoring_study``: ``generate_series``, not the
ORM) and opened by ``scoring_open`` itself. ``BENCHMARK_SIZE=tiny`` runs it at 200 responses and
1,000 tasks.

The queue is timed through the services the API calls (``task_next`` → ``score_submit``, one
transaction each, the lean prepared statements), one reviewer at a time, in the larger study
and in the smaller one: p50 and p95 of each, after ``ANALYZE``. Reported besides: the task
table's heap and each of its indexes (``pg_relation_size``), the assignment and score tables,
and the database's size.
"""

import json
import os
import statistics
import time
from pathlib import Path

import pytest
from django.db import connection

from apps.raters.models import Score
from apps.raters.services import score_submit, scoring_open, task_next
from tests.benchmarks.conftest import sized
from tests.factories import MembershipFactory, UserFactory, bulk_scoring_study

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

OPEN_RESPONSES = int(os.environ.get("BENCH_OPEN_RESPONSES", sized("1000000", "200")))
TOTAL_TASKS = int(os.environ.get("BENCH_TOTAL_TASKS", sized("10000000", "1000")))
K = 2
CYCLES = int(os.environ.get("BENCH_CYCLES", sized("300", "10")))


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def _open(responses: int) -> tuple[object, dict]:
    """A study of ``responses`` responses written by SQL, then opened, timed (wall, this
    process's CPU, the PostgreSQL backend's CPU)."""
    t0 = time.perf_counter()
    version = bulk_scoring_study(responses=responses, scores_per_response=K)
    built = time.perf_counter() - t0
    pi = MembershipFactory(protocol=version.protocol, role="pi").user
    backend = _backend_pid()
    load = os.getloadavg()
    cpu = time.process_time(), _cpu_seconds(backend)
    t0 = time.perf_counter()
    created = scoring_open(version=version, user=pi)
    wall = time.perf_counter() - t0
    assert created == (responses // 100) * 100 * K
    return version, {
        "responses": (responses // 100) * 100,
        "tasks_created": created,
        "build_by_sql_s": round(built, 1),
        "scoring_open_s": round(wall, 2),
        "python_cpu_s": round(time.process_time() - cpu[0], 2),
        "database_backend_cpu_s": round(_cpu_seconds(backend) - cpu[1], 2),
        "load_before": [round(x, 2) for x in load],
    }


def _cycles(version, n: int) -> dict:
    """``n`` next → score cycles by one reviewer of ``version``: latencies in ms."""
    reviewer = UserFactory()
    MembershipFactory(user=reviewer, protocol=version.protocol, role="reviewer")
    nexts, scores = [], []
    backend = _backend_pid()
    load = os.getloadavg()
    cpu = time.process_time(), _cpu_seconds(backend)
    for i in range(n + 10):
        t0 = time.perf_counter()
        assignment = task_next(reviewer=reviewer)
        t1 = time.perf_counter()
        assert assignment is not None and assignment.task.version_id == version.pk
        score_submit(
            task_token=assignment.task.token,
            reviewer=reviewer,
            values={"label": "2_full_refusal"},
            idempotency_key=f"scale-{assignment.task.token}",
        )
        t2 = time.perf_counter()
        if i == 9:  # the first ten warm the connection's prepared statements
            cpu = time.process_time(), _cpu_seconds(backend)
        if i >= 10:
            nexts.append((t1 - t0) * 1000)
            scores.append((t2 - t1) * 1000)
    python_cpu = time.process_time() - cpu[0]
    database_cpu = _cpu_seconds(backend) - cpu[1]
    nexts.sort()
    scores.sort()
    return {
        "cycles": n,
        "next_p50_ms": round(statistics.median(nexts), 2),
        "next_p95_ms": round(nexts[int(0.95 * (n - 1))], 2),
        "score_p50_ms": round(statistics.median(scores), 2),
        "score_p95_ms": round(scores[int(0.95 * (n - 1))], 2),
        "python_cpu_ms_per_cycle": round(python_cpu * 1000 / n, 2),
        "database_backend_cpu_ms_per_cycle": round(database_cpu * 1000 / n, 2),
        "load_before": [round(x, 2) for x in load],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }


def _sizes() -> dict:
    """Heap and index sizes (MB) of the queue's tables, and the database's."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c "
            "JOIN pg_index i ON i.indexrelid = c.oid "
            "WHERE i.indrelid = 'raters_scoringtask'::regclass ORDER BY 1"
        )
        indexes = {name: round(size / 2**20, 1) for name, size in cursor.fetchall()}
        cursor.execute(
            "SELECT pg_relation_size('raters_scoringtask'), "
            "pg_indexes_size('raters_scoringtask'), "
            "pg_total_relation_size('raters_assignment'), pg_total_relation_size('raters_score'), "
            "pg_total_relation_size('responses_response'), "
            "pg_database_size(current_database()), (SELECT count(*) FROM raters_scoringtask)"
        )
        heap, all_indexes, assignments, scores, responses, database, rows = cursor.fetchone()
    mb = lambda b: round(b / 2**20, 1)  # noqa: E731
    return {
        "task_rows": rows,
        "task_heap_mb": mb(heap),
        "task_indexes_mb": mb(all_indexes),
        "task_index_mb": indexes,
        "assignment_total_mb": mb(assignments),
        "score_total_mb": mb(scores),
        "response_total_mb": mb(responses),
        "database_mb": mb(database),
    }


def test_ten_million_tasks():
    opened, opening = _open(OPEN_RESPONSES)
    print("\nSCORING OPEN AT SCALE " + json.dumps(opening))
    rest = max(TOTAL_TASKS - opening["tasks_created"], 0) // K
    large, filling = _open(rest) if rest >= 100 else (None, None)
    print("SECOND STUDY " + json.dumps(filling))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    sizes = _sizes()
    print("TABLE SIZES " + json.dumps(sizes))
    for name, version in (("larger study", large), ("1M-response study", opened)):
        if version is None:
            continue
        figures = _cycles(version, CYCLES)
        print(f"QUEUE AT {sizes['task_rows']} TASKS, {name} " + json.dumps(figures))
    assert sizes["task_rows"] >= min(TOTAL_TASKS, opening["tasks_created"])
    # Every cycle scored, in each study timed (ten warming cycles each).
    assert Score.objects.count() == (CYCLES + 10) * (2 if large is not None else 1)
