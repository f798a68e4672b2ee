"""Benchmarks of the transparency log (issue 33 deliverable 4; issue 38 deliverable 3's
verification figure). Figures in docs/performance.md.

    DATABASE_URL=postgres://… .venv/bin/python -m pytest -s -o addopts="" -p no:randomly \\
        tests/benchmarks/test_transparency_log.py     # BENCHMARK_SIZE=tiny for a smoke run

One protocol's log of 1,000,000 entries is loaded in bulk (COPY; appending a million entries
through the service would take hours) with its stored subtree roots, and a checkpoint is signed
at 990,000 entries (the signer's state file, as if it had signed an hour of appends ago). Then:

1. verifying the log from the last checkpoint (``tree.verify_since``: the stored roots checked
   against the signed root, entry 990,000 proven to be its last leaf, the 10,000 entries after
   it chained, hashed and added to the tree): target ≤ 10 s;
2. the signer's whole round from there (verify, store roots, consistency proof, sign);
3. an inclusion proof served by the API (``GET …/log/proof/inclusion?seq=N``, the test client,
   signed in as an auditor), p50 over 200 random entries: target ≤ 5 ms; and, for a loaded
   machine, its ratio to the proof alone measured in the same loop;
4. for comparison, the full verification of all 1,000,000 entries from the database against
   the checkpoint (what ``verify_log`` and an auditor's export check do: O(n)).
"""

import base64
import os
import random
import statistics
import time

import pytest
from django.db import connection, transaction
from django.test import Client

from apps.deviations import chain, checkpoints, tree
from apps.deviations.selectors import chain_verify
from tests.benchmarks.conftest import meets, sized
from tests.benchmarks.test_deviation_log import report, synthetic_rows
from tests.factories import MembershipFactory, ProtocolFactory, UserFactory

pytestmark = [pytest.mark.timeout(0), pytest.mark.postgres]

ENTRIES = int(os.environ.get("TLOG_BENCH_ENTRIES", sized("1000000", "600")))
SINCE_CHECKPOINT = int(os.environ.get("TLOG_BENCH_NEW", sized("10000", "100")))
PROOFS = int(sized("200", "20"))


def _copy_entries(protocol, rows) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        with cursor.cursor.copy(
            "COPY deviations_logentry (protocol_id, protocol_code, seq, recorded_at, actor_name, "
            "kind, rationale, refs, occurred_on, outcome_visible, prev_hash, hash) FROM STDIN"
        ) as copy:
            for entry, moment in rows:
                copy.write_row(
                    (
                        protocol.pk, entry["protocol"], entry["seq"], moment, entry["actor"],
                        entry["kind"], entry["rationale"],
                        chain.canonical_json(entry["refs"]).decode(), entry["occurred_on"],
                        entry["outcome_visible"], entry["prev_hash"], entry["hash"],
                    )
                )  # fmt: skip
        cursor.execute("ANALYZE deviations_logentry")


def build_log():
    """The log, its stored subtree roots through 990,000 entries (as the signer would have left
    them) and the signer's state at 990,000 entries; committed (the cursors run in
    autocommit, as the management commands and exports do)."""
    protocol = ProtocolFactory(code="TLOG-BENCH")
    started = time.perf_counter()
    rows = list(synthetic_rows(ENTRIES, protocol.code))
    report("building (hashing) the synthetic chain", ENTRIES, time.perf_counter() - started)
    started = time.perf_counter()
    _copy_entries(protocol, rows)
    report("loading entries into PostgreSQL (COPY)", ENTRIES, time.perf_counter() - started)
    signed_size = ENTRIES - SINCE_CHECKPOINT
    started = time.perf_counter()
    compact = tree.bulk_store_tree(
        protocol_id=protocol.pk, entry_hashes=(e["hash"] for e, _ in rows[:signed_size])
    )
    report("computing and storing the subtree roots", signed_size, time.perf_counter() - started)
    root = compact.root()
    origin = checkpoints.origin_for(protocol.code)
    note = checkpoints.sign_checkpoint(checkpoints.signing_key(), origin, signed_size, root)
    state = {"origin": origin, "size": signed_size, "note": note,
             "root": base64.b64encode(root).decode()}  # fmt: skip
    auditor = UserFactory()
    MembershipFactory(protocol=protocol, user=auditor, role="auditor")
    return protocol, signed_size, root, state, note, auditor


# One test: a transactional test's database is emptied after it, and the log takes minutes.
@pytest.mark.django_db(transaction=True)
def test_transparency_log_at_a_million_entries(settings, tmp_path):
    protocol, signed_size, root, state, note, auditor = build_log()
    verified_in = verify_from_checkpoint(protocol, signed_size, root)
    sign_from_checkpoint(protocol, signed_size, state, settings, tmp_path)
    proof_p50 = serve_inclusion_proofs(protocol, signed_size, auditor)
    verify_everything(protocol, signed_size, note)
    # The targets, checked once every figure is printed.
    assert meets(verified_in, at_most=10.0), f"verification took {verified_in:.2f} s"
    assert meets(proof_p50, at_most=5.0), f"an inclusion proof took {proof_p50:.2f} ms (p50)"


def verify_from_checkpoint(protocol, signed_size, root):
    load = os.getloadavg()[0]
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        verified = tree.verify_since(protocol=protocol, size=signed_size, root=root)
        best = min(best, time.perf_counter() - started)
        assert verified.report.ok, verified.report.summary()
        assert verified.size == ENTRIES
    print(
        f"\n[bench] verify a log of {ENTRIES:,} entries from the checkpoint at {signed_size:,} "
        f"({ENTRIES - signed_size:,} new): best of 3 {best:.2f} s; load {load:.2f} on "
        f"{os.cpu_count()} CPUs"
    )
    return best


def sign_from_checkpoint(protocol, signed_size, state, settings, tmp_path):
    settings.LOG_SIGNING_STATE_DIR = str(tmp_path)
    checkpoints._write_state(state["origin"], state)
    started = time.perf_counter()
    checkpoint = checkpoints.checkpoint_write(protocol=protocol)
    elapsed = time.perf_counter() - started
    assert checkpoint.seq == ENTRIES and checkpoint.document["previous_size"] == signed_size
    print(
        f"[bench] the signer's round from {signed_size:,} to {ENTRIES:,} entries (verify, "
        f"store roots, consistency proof, sign): {elapsed:.2f} s"
    )


def serve_inclusion_proofs(protocol, signed_size, auditor):
    client = Client()
    client.force_login(auditor)
    rng = random.Random(33)
    url = f"/api/v1/protocols/{protocol.code}/log/proof/inclusion"
    client.get(url, {"seq": 1, "tree_size": signed_size})  # warm-up (imports, connection)
    api_times, proof_times = [], []
    for _ in range(PROOFS):
        seq = rng.randint(1, signed_size)
        started = time.perf_counter()
        response = client.get(url, {"seq": seq, "tree_size": signed_size})
        api_times.append(time.perf_counter() - started)
        assert response.status_code == 200
        started = time.perf_counter()
        tree.inclusion_proof(protocol_id=protocol.pk, seq=seq, tree_size=signed_size)
        proof_times.append(time.perf_counter() - started)
    p50 = statistics.median(api_times) * 1000
    p95 = sorted(api_times)[int(len(api_times) * 0.95) - 1] * 1000
    alone = statistics.median(proof_times) * 1000
    print(
        f"\n[bench] inclusion proof in a tree of {signed_size:,}: API p50 {p50:.2f} ms, p95 "
        f"{p95:.2f} ms over {PROOFS}; the proof alone (tree.inclusion_proof) p50 "
        f"{alone:.2f} ms; API / proof alone {p50 / alone:.2f}; load {os.getloadavg()[0]:.2f}"
    )
    return p50


def verify_everything(protocol, signed_size, note):
    document = {"type": chain.NOTE_CHECKPOINT_TYPE, "protocol": protocol.code, "note": note}
    started = time.perf_counter()
    result = chain_verify(protocol=protocol, checkpoints=[document])
    elapsed = time.perf_counter() - started
    assert result.ok and result.verified_through == ENTRIES, result.summary()
    assert signed_size in result.anchors_checked
    report("full verification of every entry and the tree, from PostgreSQL", ENTRIES, elapsed)
