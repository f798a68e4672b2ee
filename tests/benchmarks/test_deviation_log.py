"""Benchmarks of the deviation log (not part of ``make test``; figures in docs/performance.md).

    make benchmarks        # or, for these alone, on PostgreSQL:
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/preregistry \\
      .venv/bin/python -m pytest tests/benchmarks/test_deviation_log.py -s -o addopts=""

1. Verification speed over 1,000,000 entries: the pure verifier over entry dicts in memory
   (target ≥ 200,000 entries/s), the same chain read from PostgreSQL through a server-side cursor,
   and the offline script over the 1,000,000-line JSONL export.
2. Append throughput with 8 concurrent writers on PostgreSQL (each append its own transaction,
   as a service's would be), against one writer alone.

Sizes can be lowered for a quick run with DEVIATION_BENCH_ENTRIES / DEVIATION_BENCH_APPENDS.
"""

import json
import os
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import connection, transaction

from apps.deviations import chain
from apps.deviations.chain import GENESIS_HASH, entry_hash, entry_line, verify_chain
from apps.deviations.checkpoints import origin_for, sign_checkpoint, signing_key
from apps.deviations.selectors import chain_verify
from apps.deviations.services import deviation_append
from tests.benchmarks.conftest import meets, sized
from tests.deviations.offline import run_script
from tests.factories import ProtocolFactory, UserFactory

# Building, loading and verifying a million entries takes minutes on a small machine: no timeout.
pytestmark = pytest.mark.timeout(0)

ENTRIES = int(os.environ.get("DEVIATION_BENCH_ENTRIES", sized("1000000", "500")))
APPENDS_PER_WRITER = int(os.environ.get("DEVIATION_BENCH_APPENDS", sized("250", "5")))
TARGET_PER_SECOND = 200_000
START = datetime(2026, 11, 30, 1, 50, tzinfo=UTC)
KINDS = ("freeze", "exclusion", "deviation", "import", "score_correction", "analysis")


def report(label: str, count: int, seconds: float) -> float:
    rate = count / seconds
    print(f"\n[bench] {label}: {count:,} in {seconds:.2f} s = {rate:,.0f}/s", flush=True)
    return rate


def synthetic_rows(n: int, protocol_code: str = "BENCH-01"):
    """``n`` realistic entries, chained: (entry dict, recorded_at datetime) pairs."""
    previous = GENESIS_HASH
    for seq in range(1, n + 1):
        moment = START + timedelta(microseconds=seq * 37)
        entry = {
            "protocol": protocol_code,
            "seq": seq,
            "recorded_at": moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "occurred_on": "2026-11-29" if seq % 50 == 0 else None,
            "actor": "system" if seq % 3 else "reviewer-07",
            "kind": KINDS[seq % len(KINDS)],
            "rationale": f"Response {seq} imported from batch {seq // 1000} (inspect log, "
            f"attempt 1); terminal outcome: completed — §6.2",
            "refs": [{"type": "response", "id": seq, "label": f"Response {seq}"}],
            "outcome_visible": seq > n * 9 // 10,
            "prev_hash": previous,
        }
        entry["hash"] = previous = entry_hash(entry)
        yield entry, moment


@pytest.fixture(scope="module")
def million():
    started = time.perf_counter()
    rows = list(synthetic_rows(ENTRIES))
    report("building (hashing) the synthetic chain", ENTRIES, time.perf_counter() - started)
    return rows


def test_pure_verification_speed(million):
    entries = [entry for entry, _ in million]
    best_wall = best_cpu = 0.0
    for _ in range(3):
        wall, cpu = time.perf_counter(), time.process_time()
        result = verify_chain(entries)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        best_wall = max(best_wall, report("pure verify_chain over dicts (wall)", ENTRIES, wall))
        best_cpu = max(best_cpu, ENTRIES / cpu)
        assert result.ok and result.verified_through == ENTRIES
    print(
        f"[bench] pure verification, best of 3: {best_wall:,.0f} entries/s wall clock, "
        f"{best_cpu:,.0f} entries/s of this process's CPU time (target {TARGET_PER_SECOND:,}); "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    )
    assert meets(best_wall, at_least=TARGET_PER_SECOND)


def test_offline_script_over_a_jsonl_export(million, tmp_path):
    """The offline verifier as an auditor runs it (``python -I -S`` with only `cryptography`),
    on the export with its signed checkpoint (C2SP note) as first line and the key pinned: the
    chain, the Merkle tree and the signature of the whole log."""
    key = signing_key()
    root = chain.merkle_root(chain.leaf_hash(entry["hash"]) for entry, _ in million)
    note = sign_checkpoint(key, origin_for("BENCH-01"), ENTRIES, root)
    export = tmp_path / "bench.jsonl"
    with open(export, "w", encoding="ascii") as out:
        head = {"type": chain.NOTE_CHECKPOINT_TYPE, "protocol": "BENCH-01", "note": note}
        out.write(json.dumps(head, sort_keys=True) + "\n")
        for entry, _ in million:
            out.write(entry_line(entry) + "\n")
    print(f"\n[bench] export size: {export.stat().st_size / 1e6:.0f} MB")
    script = tmp_path / "verify_log.py"
    script.write_bytes(Path(chain.__file__).read_bytes())
    try:
        started = time.perf_counter()
        result = run_script(script, str(export), "--public-key", key.public_b64, timeout=1800)
        report(
            "offline script (read + parse JSONL + verify chain, tree and signature)",
            ENTRIES,
            time.perf_counter() - started,
        )
        assert result.returncode == 0, result.stdout + result.stderr
    finally:
        export.unlink()  # half a gigabyte: not left behind in pytest's temporary folders


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_verification_from_postgresql(million):
    # Transactional: the entries are committed and verify_log's read runs in autocommit, as the
    # management command and the export do in production (a WITH HOLD server-side cursor).
    protocol = ProtocolFactory(code="BENCH-01")
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        raw = cursor.cursor  # psycopg's own cursor, for COPY
        with raw.copy(
            "COPY deviations_logentry (protocol_id, protocol_code, seq, recorded_at, actor_name, "
            "kind, rationale, refs, occurred_on, outcome_visible, prev_hash, hash) FROM STDIN"
        ) as copy:
            for entry, moment in million:
                copy.write_row(
                    (
                        protocol.pk,
                        entry["protocol"],
                        entry["seq"],
                        moment,
                        entry["actor"],
                        entry["kind"],
                        entry["rationale"],
                        chain.canonical_json(entry["refs"]).decode(),
                        entry["occurred_on"],
                        entry["outcome_visible"],
                        entry["prev_hash"],
                        entry["hash"],
                    )
                )
        cursor.execute("ANALYZE deviations_logentry")
    report("loading entries into PostgreSQL (COPY)", ENTRIES, time.perf_counter() - started)
    best = 0.0
    for _ in range(2):
        started = time.perf_counter()
        result = chain_verify(protocol=protocol)
        best = max(
            best,
            report(
                "chain_verify from PostgreSQL (server-side cursor)",
                ENTRIES,
                time.perf_counter() - started,
            ),
        )
        assert result.ok and result.verified_through == ENTRIES, result.summary()
    print(f"[bench] verification from PostgreSQL, best of 2: {best:,.0f} entries/s")


def _run_writers(protocols, appends_each: int, *, durable: bool = True) -> float:
    """One thread (own connection) per protocol in ``protocols``; the wall time of all appends."""
    writers = len(protocols)
    users = [UserFactory() for _ in range(writers)]
    start, errors = threading.Barrier(writers + 1), []

    def write(user, protocol):
        try:
            if not durable:
                with connection.cursor() as cursor:
                    cursor.execute("SET synchronous_commit TO off")
            start.wait(timeout=60)
            for n in range(appends_each):
                with transaction.atomic():
                    deviation_append(
                        protocol=protocol,
                        kind="import",
                        rationale=f"Response {n} imported by {user.username}",
                        actor=user,
                        refs=[{"type": "response", "id": n, "label": f"Response {n}"}],
                    )
        except Exception as error:  # reported by the assertion below
            errors.append(error)
        finally:
            connection.close()

    threads = [
        threading.Thread(target=write, args=pair) for pair in zip(users, protocols, strict=True)
    ]
    for thread in threads:
        thread.start()
    start.wait(timeout=60)
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    assert errors == []
    return elapsed


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_append_throughput_with_eight_concurrent_writers():
    total = 8 * APPENDS_PER_WRITER
    one = ProtocolFactory(code="BENCH-1W")
    rate_one = report("appends, 1 writer", total, _run_writers([one], total))

    shared = ProtocolFactory(code="BENCH-8W")
    rate_eight = report(
        "appends, 8 concurrent writers on one protocol",
        total,
        _run_writers([shared] * 8, APPENDS_PER_WRITER),
    )
    assert chain_verify(protocol=shared).verified_through == total

    separate = [ProtocolFactory(code=f"BENCH-P{n}") for n in range(8)]
    rate_apart = report(
        "appends, 8 concurrent writers on 8 protocols",
        total,
        _run_writers(separate, APPENDS_PER_WRITER),
    )
    assert all(chain_verify(protocol=p).verified_through == APPENDS_PER_WRITER for p in separate)

    relaxed = ProtocolFactory(code="BENCH-8W-NOSYNC")
    rate_relaxed = report(
        "appends, 8 writers on one protocol, synchronous_commit off (diagnosis only)",
        total,
        _run_writers([relaxed] * 8, APPENDS_PER_WRITER, durable=False),
    )
    assert chain_verify(protocol=relaxed).verified_through == total
    print(
        f"[bench] append throughput: 1 writer {rate_one:,.0f}/s; 8 writers on one protocol "
        f"{rate_eight:,.0f}/s; 8 writers on 8 protocols {rate_apart:,.0f}/s; 8 writers on one "
        f"protocol without waiting for the WAL flush {rate_relaxed:,.0f}/s"
    )
