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
   as an auditor signed in, and as a program calls it, with an API token), p50 over 200 random
   entries: target ≤ 5 ms, checked on the token's figure; measured interleaved,
   request by request, with the same proof through DRF's whole path as main served it before
   the lean path (``BeforeInclusionProofApi``) and with the proof alone, each with its wall
   time and this process's CPU time per request, and the load averages printed;
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
from django.urls import path
from rest_framework.authtoken.models import Token
from rest_framework.response import Response
from rest_framework.views import APIView

import config.urls
from apps.core.apis import validated
from apps.deviations import chain, checkpoints, tree
from apps.deviations.apis import InclusionProofApi
from apps.deviations.selectors import LOG_READER_ROLES, chain_verify
from apps.protocols.access import get_protocol_for
from tests.benchmarks.conftest import backend_pid, meets, process_cpu_seconds, sized
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
    proof_p50 = serve_inclusion_proofs(protocol, signed_size, auditor, settings)
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


class BeforeInclusionProofApi(APIView):
    """The inclusion proof as main served it before the lean path (at 02d904c): the same access
    rule and proof, through DRF's whole request path and every middleware. Mounted beside the
    real route (``urlpatterns`` below) so that both are measured in one process, interleaved."""

    def get(self, request, code: str):
        protocol = get_protocol_for(user=request.user, pk=code, roles=LOG_READER_ROLES)
        params = validated(InclusionProofApi.InputSerializer, request.query_params)
        return Response(InclusionProofApi._proof(protocol, params["seq"], params.get("tree_size")))


BEFORE = "api/v1/_before/protocols/<str:code>/log/proof/inclusion"
# The site's URLs, with the "before" route where the log's API is mounted (the same walk).
urlpatterns = list(config.urls.urlpatterns)
urlpatterns.insert(
    next(i for i, p in enumerate(urlpatterns) if getattr(p, "namespace", "") == "deviations-api"),
    path(BEFORE, BeforeInclusionProofApi.as_view()),
)


def _timed(call, backend):
    """(wall seconds, this process's CPU seconds, its PostgreSQL backend's CPU seconds, result)
    of ``call()``."""
    database = process_cpu_seconds(backend)
    wall, cpu = time.perf_counter(), time.process_time()
    result = call()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, cpu, process_cpu_seconds(backend) - database, result


def _ms(values, q=0.5):
    return sorted(values)[min(len(values) - 1, int(len(values) * q))] * 1000


def serve_inclusion_proofs(protocol, signed_size, auditor, settings):
    """Before (DRF's whole path) and after (the lean path), and the proof alone, interleaved
    request by request in this process, so that a loaded machine loads all three alike. CPU
    time is this process's (the web process's share) and, apart, its PostgreSQL backend's
    (read from /proc in clock ticks of 10 ms: only its mean over the requests means
    anything)."""
    settings.ROOT_URLCONF = __name__
    client = Client()
    client.force_login(auditor)
    # A program's request (a witness, the offline verifier's fetch, a script): an API token.
    token = Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=auditor).key}")
    rng = random.Random(33)
    after = f"/api/v1/protocols/{protocol.code}/log/proof/inclusion"
    before = "/" + BEFORE.replace("<str:code>", protocol.code)
    for url in (after, before):  # warm-up (imports, connection, URL caches)
        for _ in range(5):
            assert client.get(url, {"seq": 1, "tree_size": signed_size}).status_code == 200
            assert token.get(url, {"seq": 1, "tree_size": signed_size}).status_code == 200
    backend = backend_pid(connection)
    times: dict[str, tuple[list[float], list[float], list[float]]] = {
        name: ([], [], []) for name in ("before", "after", "token", "alone")
    }
    loads = [os.getloadavg()]
    for n in range(PROOFS):
        query = {"seq": rng.randint(1, signed_size), "tree_size": signed_size}
        calls = {
            "before": lambda q=query: client.get(before, q),
            "after": lambda q=query: client.get(after, q),
            "token": lambda q=query: token.get(after, q),
            "alone": lambda q=query: tree.inclusion_proof(
                protocol_id=protocol.pk, seq=q["seq"], tree_size=signed_size
            ),
        }
        order = ["before", "after", "token"] if n % 2 else ["token", "after", "before"]
        order.append("alone")
        bodies = {}
        for name in order:
            wall, cpu, database, result = _timed(calls[name], backend)
            times[name][0].append(wall)
            times[name][1].append(cpu)
            times[name][2].append(database)
            bodies[name] = result
        assert bodies["after"].status_code == bodies["before"].status_code == 200
        assert bodies["token"].status_code == 200
        assert bodies["after"].content == bodies["before"].content == bodies["token"].content
    loads.append(os.getloadavg())
    print(
        f"\n[bench] inclusion proof in a tree of {signed_size:,}, {PROOFS} requests each, "
        f"interleaved; load averages (1, 5, 15 min) {tuple(round(x, 2) for x in loads[0])} "
        f"before and {tuple(round(x, 2) for x in loads[1])} after, {os.cpu_count()} CPUs"
    )
    for name, label in (
        ("before", "API before (DRF's whole path, every middleware)"),
        ("after", "API after (the lean path), signed in (session)"),
        ("token", "API after (the lean path), an API token"),
        ("alone", "the proof alone (tree.inclusion_proof)"),
    ):
        walls, cpus, database = times[name]
        print(
            f"[bench]   {label}: wall p50 {_ms(walls):.2f} ms, p95 {_ms(walls, 0.95):.2f} ms; "
            f"CPU per request p50 {_ms(cpus):.2f} ms, mean {statistics.mean(cpus) * 1000:.2f} ms"
            f" in this process, mean {statistics.mean(database) * 1000:.2f} ms in PostgreSQL"
        )
    # The target is checked on a program's request: proofs are fetched by witnesses, the offline
    # verifier's fetch and scripts, with a token; the signed-in figure is printed beside it.
    return _ms(times["token"][0])


def verify_everything(protocol, signed_size, note):
    document = {"type": chain.NOTE_CHECKPOINT_TYPE, "protocol": protocol.code, "note": note}
    started = time.perf_counter()
    result = chain_verify(protocol=protocol, checkpoints=[document])
    elapsed = time.perf_counter() - started
    assert result.ok and result.verified_through == ENTRIES, result.summary()
    assert signed_size in result.anchors_checked
    report("full verification of every entry and the tree, from PostgreSQL", ENTRIES, elapsed)
