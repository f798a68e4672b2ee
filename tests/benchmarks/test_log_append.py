"""Append throughput of the deviation log (issue #38 point 3); figures in docs/performance.md.

    DATABASE_URL=postgres://… .venv/bin/python -m pytest -s -o addopts="" -p no:randomly \\
        tests/benchmarks/test_log_append.py       # BENCHMARK_SIZE=tiny for a smoke run

1. One import of 100,000 rows logging an entry per row: ``deviation_append_many`` with 100,000
   entries in one transaction (validated, one lock, one read of the head, hashed in Python,
   one INSERT per 2,000): target ≥ 5,000 entries/s.
2. 16 concurrent writers on one protocol, each entry its own transaction (``deviation_append``,
   as a service appends one): target ≥ 1,000 entries/s; and the same 16 writers appending
   batches of 10 per transaction (a small import each), and 16 writers on 16 protocols.

Each figure with wall time, this process's CPU time and the load averages; every chain is
verified afterwards (no gap, no fork). Sizes: LOG_APPEND_BATCH, LOG_APPEND_EACH.
"""

import os
import threading
import time

import pytest
from django.db import connection, transaction

from apps.deviations.selectors import chain_verify
from apps.deviations.services import NewEntry, deviation_append, deviation_append_many
from tests.benchmarks.conftest import backend_cpu_seconds, meets, sized
from tests.factories import ProtocolFactory, UserFactory

pytestmark = [pytest.mark.timeout(0), pytest.mark.postgres]

BATCH = int(os.environ.get("LOG_APPEND_BATCH", sized("100000", "500")))
WRITERS = 16
EACH = int(os.environ.get("LOG_APPEND_EACH", sized("100", "5")))


def _load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def _row_entry(n: int, user) -> NewEntry:
    return NewEntry(
        kind="import",
        rationale=f"Response {n} imported from responses.csv (row {n + 1}); terminal outcome: "
        "completed",
        actor=user,
        refs=[{"type": "response", "id": n, "label": f"Response {n}"}],
    )


def _verified(protocol, expected: int) -> None:
    report = chain_verify(protocol=protocol)
    assert report.ok and report.verified_through == expected, report.summary()


@pytest.mark.django_db(transaction=True)
def test_one_import_appends_a_batch():
    protocol, user = ProtocolFactory(code="APPEND-BATCH"), UserFactory()
    entries = [_row_entry(n, user) for n in range(1, BATCH + 1)]
    load = _load()
    database = backend_cpu_seconds(connection)
    wall, cpu = time.perf_counter(), time.process_time()
    with transaction.atomic():
        deviation_append_many(protocol=protocol, entries=entries)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    database = backend_cpu_seconds(connection) - database
    rate = BATCH / wall
    print(
        f"\n[bench] one import of {BATCH:,} entries (deviation_append_many, one transaction): "
        f"{wall:.2f} s wall = {rate:,.0f} entries/s; CPU {cpu:.2f} s in this process + "
        f"{database:.2f} s in its PostgreSQL backend = {BATCH / (cpu + database):,.0f} entries "
        f"per CPU-second; {load} before, {_load()} after"
    )
    _verified(protocol, BATCH)
    assert meets(rate, at_least=5_000), f"{rate:,.0f} entries/s"


def _writers(protocols, *, per_transaction: int) -> tuple[float, float]:
    """One thread (own connection) per protocol in ``protocols``, each appending EACH entries,
    ``per_transaction`` per transaction. (wall seconds, this process's CPU seconds)."""
    users = [UserFactory() for _ in protocols]
    start, errors = threading.Barrier(len(protocols) + 1), []

    def write(user, protocol):
        try:
            start.wait(timeout=60)
            for first in range(0, EACH, per_transaction):
                with transaction.atomic():
                    if per_transaction == 1:
                        deviation_append(
                            protocol=protocol,
                            kind="exclusion",
                            rationale=f"Attempt {first} excluded by {user.username}",
                            actor=user,
                            refs=[{"type": "attempt", "id": first, "label": f"attempt {first}"}],
                        )
                    else:
                        deviation_append_many(
                            protocol=protocol,
                            entries=[
                                _row_entry(n, user)
                                for n in range(first, min(first + per_transaction, EACH))
                            ],
                        )
        except Exception as error:  # a thread's exception is otherwise lost
            errors.append(error)
        finally:
            connection.close()

    pairs = zip(users, protocols, strict=True)
    threads = [threading.Thread(target=write, args=pair) for pair in pairs]
    for thread in threads:
        thread.start()
    start.wait(timeout=60)
    wall, cpu = time.perf_counter(), time.process_time()
    for thread in threads:
        thread.join()
    assert errors == []
    return time.perf_counter() - wall, time.process_time() - cpu


@pytest.mark.django_db(transaction=True)
def test_sixteen_concurrent_writers():
    total = WRITERS * EACH
    figures = {}
    for label, protocols, per_transaction in (
        ("16 writers on one protocol, one entry per transaction", "one", 1),
        ("16 writers on one protocol, 10 entries per transaction", "one", 10),
        ("16 writers on 16 protocols, one entry per transaction", "many", 1),
    ):
        if protocols == "one":
            shared = ProtocolFactory()
            chosen = [shared] * WRITERS
        else:
            chosen = [ProtocolFactory() for _ in range(WRITERS)]
        load = _load()
        wall, cpu = _writers(chosen, per_transaction=per_transaction)
        figures[label] = total / wall
        print(
            f"\n[bench] {label}: {total:,} entries in {wall:.2f} s = {total / wall:,.0f} "
            f"entries/s; {cpu:.2f} s CPU in this process; {load} before, {_load()} after"
        )
        for protocol in set(chosen):
            _verified(protocol, total if protocols == "one" else EACH)
    rate = figures["16 writers on one protocol, one entry per transaction"]
    assert meets(rate, at_least=1_000), f"{rate:,.0f} entries/s"
