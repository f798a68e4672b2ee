"""Benchmark: 16 concurrent reviewers over 200,000 open scoring tasks on PostgreSQL.

Not part of the default run. Reproduce (figures in docs/performance.md):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/prereg_raters \\
      .venv/bin/python -m pytest -o addopts="" -p no:cacheprovider -s \\
      tests/benchmarks/test_queue_benchmark.py

Each reviewer is a process with its own connection that loops ``task_next`` → ``score_submit`` for
``BENCH_SECONDS`` (default 60). Reported: next-task latency p50/p95 (the service call, in one
transaction, as the API makes it), throughput (reservations + submits per second, all reviewers),
and double assignments — a task reserved twice at once or scored twice, a response scored by one
reviewer twice, or by more than k — which must be 0.
"""

import json
import multiprocessing
import os
import statistics
import threading
import time
from collections import Counter

import pytest
from django.db import connection, connections, transaction

from apps.raters.models import Assignment, Score, ScoringTask
from apps.raters.services import scoring_open
from tests.benchmarks.conftest import sized
from tests.benchmarks.reviewer_process import reviewer_loop
from tests.factories import (
    MembershipFactory,
    UserFactory,
    bulk_scoring_study,
)

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

RESPONSES = int(os.environ.get("BENCH_RESPONSES", sized("100000", "200")))
K = 2
REVIEWERS = 16
SECONDS = float(os.environ.get("BENCH_SECONDS", sized("60", "2")))


def _explain_claim(version, reviewer) -> str:
    """PostgreSQL's plan for the fresh-task claim: it should be an index scan of
    ``scoringtask_queue`` stopping at the first row."""
    from apps.raters.plan import rating_plan
    from apps.raters.selectors import claim_queryset
    from apps.raters.services.queue import reviewer_offset

    offset = reviewer_offset(seed=rating_plan(version).seed, reviewer_id=reviewer.pk)
    queryset = claim_queryset(
        version_id=version.pk, reviewer=reviewer, rank=1, offset=offset, wrapped=False
    )[:1]
    with transaction.atomic(), connection.cursor() as cursor:
        sql, params = queryset.query.sql_with_params()
        cursor.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


def test_queue_under_16_concurrent_reviewers():
    started = time.perf_counter()
    version = bulk_scoring_study(responses=RESPONSES, scores_per_response=K)
    pi = MembershipFactory(protocol=version.protocol, role="pi").user
    built = time.perf_counter() - started
    started = time.perf_counter()
    created = scoring_open(version=version, user=pi)
    opened = time.perf_counter() - started
    assert created == RESPONSES * K
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE raters_scoringtask")
    reviewers = []
    for _ in range(REVIEWERS):
        user = UserFactory()
        MembershipFactory(user=user, protocol=version.protocol, role="reviewer")
        reviewers.append(user)

    plan = _explain_claim(version, reviewers[0])
    # One process per reviewer (as gunicorn workers would be), each with its own connection:
    # threads would measure the GIL rather than the queue. Spawned, not forked (reviewer_process).
    database = connection.settings_dict["NAME"]
    connections.close_all()
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    barrier = context.Barrier(REVIEWERS + 1)  # the parent starts the clock when all are ready
    processes = [
        context.Process(
            target=reviewer_loop,
            args=(database, r.pk, SECONDS, barrier, results),
            daemon=True,
        )
        for r in reviewers
    ]
    for process in processes:
        process.start()
    try:
        try:
            barrier.wait(timeout=240)
        except threading.BrokenBarrierError:
            reported = [results.get(timeout=10)["error"] for _ in range(results.qsize())]
            pytest.fail(f"the reviewers did not all start: {reported}")
        wall = time.perf_counter()
        outcomes = [results.get(timeout=SECONDS + 240) for _ in processes]
    finally:
        for process in processes:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
    wall = time.perf_counter() - wall
    errors = [o["error"] for o in outcomes if o["error"]]
    assert not errors, errors
    latencies = [x for o in outcomes for x in o["next"]]
    submits = [x for o in outcomes for x in o["submit"]]
    counts = [len(o["next"]) for o in outcomes]

    # Double assignments, counted from what the database holds.
    submitted_per_task = Counter(
        Assignment.objects.filter(outcome="submitted").values_list("task_id", flat=True)
    )
    scores_per_task = Counter(
        Score.objects.filter(corrects__isnull=True).values_list("task_id", flat=True)
    )
    reviewer_twice = Counter(Score.objects.values_list("response_id", "reviewer_id"))
    primary_per_response = Counter(
        Score.objects.filter(task__kind="primary").values_list("response_id", flat=True)
    )
    active_per_task = Counter(
        Assignment.objects.filter(outcome="active").values_list("task_id", flat=True)
    )
    doubles = (
        sum(1 for n in submitted_per_task.values() if n > 1)
        + sum(1 for n in scores_per_task.values() if n > 1)
        + sum(1 for n in reviewer_twice.values() if n > 1)
        + sum(1 for n in primary_per_response.values() if n > K)
        + sum(1 for n in active_per_task.values() if n > 1)
    )
    operations = 2 * len(latencies)
    ms = sorted(x * 1000 for x in latencies)
    submit_ms = sorted(x * 1000 for x in submits)
    result = {
        "open_tasks_at_start": created,
        "reviewers": REVIEWERS,
        "seconds": round(wall, 1),
        "reservations": len(latencies),
        "next_p50_ms": round(statistics.median(ms), 1),
        "next_p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 1),
        "next_max_ms": round(ms[-1], 1),
        "submit_p50_ms": round(statistics.median(submit_ms), 1),
        "submit_p95_ms": round(submit_ms[int(0.95 * (len(submit_ms) - 1))], 1),
        "throughput_ops_per_s": round(operations / wall, 1),
        "adjudication_tasks": ScoringTask.objects.filter(kind="adjudication").count(),
        "double_assignments": doubles,
        "study_build_s": round(built, 1),
        "scoring_open_s": round(opened, 1),
        "per_reviewer_min_max": [min(counts), max(counts)],
    }
    print("\nQUEUE BENCHMARK " + json.dumps(result, indent=2))
    print("CLAIM PLAN\n" + plan)
    assert doubles == 0
