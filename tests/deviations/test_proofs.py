"""Inclusion proofs for any entry and consistency proofs between any two sizes, served by the
API from stored subtree roots (issue 33 deliverable 4), checked with the RFC 9162 verifiers and
against roots computed by pymerkle; and the offline verifier's O(log n) inclusion check."""

import base64
import importlib
import json
from datetime import UTC, datetime, timedelta

import pytest
from django.apps import apps as django_apps
from django.core.cache import cache
from django.db import connection
from django.test import Client
from pymerkle import InmemoryTree
from rest_framework.authtoken.models import Token

from apps.deviations import chain, checkpoints
from apps.deviations.checkpoints import checkpoint_write
from apps.deviations.models import LogCheckpoint, LogEntry, LogTreeNode
from tests.dbroles import owner_cursor
from tests.deviations.offline import offline

pytestmark = pytest.mark.django_db

SIZE = 600  # more than two stored 256-entry blocks, and a ragged end


def bulk_log(protocol, n: int) -> list[dict]:
    """``n`` chained entries inserted in bulk (appending 600 one by one would be slow)."""
    previous, rows, dicts = chain.GENESIS_HASH, [], []
    start = datetime(2026, 12, 1, tzinfo=UTC)
    for seq in range(1, n + 1):
        moment = start + timedelta(seconds=seq)
        entry = {
            "protocol": protocol.code,
            "seq": seq,
            "recorded_at": moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "occurred_on": None,
            "actor": "system",
            "kind": "import",
            "rationale": f"Response {seq} imported",
            "refs": [{"type": "response", "id": seq, "label": f"Response {seq}"}],
            "outcome_visible": False,
            "prev_hash": previous,
        }
        entry["hash"] = previous = chain.entry_hash(entry)
        dicts.append(entry)
        rows.append(
            LogEntry(
                protocol=protocol, protocol_code=protocol.code, seq=seq, recorded_at=moment,
                actor_name="system", kind="import", rationale=entry["rationale"],
                refs=entry["refs"], outcome_visible=False, prev_hash=entry["prev_hash"],
                hash=entry["hash"],
            )
        )  # fmt: skip
    LogEntry.objects.bulk_create(rows)
    return dicts


@pytest.fixture
def signed(protocol, auditor, client):
    entries = bulk_log(protocol, SIZE)
    checkpoint = checkpoint_write(protocol=protocol)
    client.force_login(auditor)
    reference = InmemoryTree(algorithm="sha256")
    for entry in entries:
        reference.append_entry(bytes.fromhex(entry["hash"]))
    return protocol, entries, checkpoint, reference


def api(client, protocol, path, **query):
    headers = {key: query.pop(key) for key in list(query) if key.startswith("HTTP_")}
    return client.get(f"/api/v1/protocols/{protocol.code}/log/proof/{path}", query, **headers)


def test_signing_stores_the_subtree_roots_that_proofs_read(signed):
    protocol, _entries, checkpoint, reference = signed
    stored = set(LogTreeNode.objects.filter(protocol=protocol).values_list("level", "index"))
    # 600 entries: every perfect subtree of 16 entries and more (37 of 16, 18 of 32, …, 1 of 512)
    assert stored == {(level, i) for level in range(4, 10) for i in range(SIZE >> level)}
    assert checkpoint.head_hash == reference.get_root(SIZE).hex()


def test_every_entrys_inclusion_proof_verifies_against_the_signed_root(signed, client):
    protocol, entries, checkpoint, reference = signed
    root = reference.get_root(SIZE)
    for seq in (*range(1, 20), 255, 256, 257, 511, 512, 513, *range(590, SIZE + 1)):
        proof = api(client, protocol, "inclusion", seq=seq).json()
        assert proof["tree_size"] == SIZE and proof["checkpoint"] == checkpoint.document["note"]
        assert proof["entry"] == entries[seq - 1]
        path = [base64.b64decode(h) for h in proof["inclusion_path"]]
        assert len(path) <= SIZE.bit_length()
        leaf = chain.leaf_hash(entries[seq - 1]["hash"])
        assert chain.verify_inclusion(leaf, seq - 1, SIZE, path, root), seq
        assert not chain.verify_inclusion(leaf, seq % SIZE, SIZE, path, root)


def test_a_proof_in_an_earlier_tree_and_consistency_between_any_two_sizes(signed, client):
    protocol, entries, _checkpoint, reference = signed
    proof = api(client, protocol, "inclusion", seq=100, tree_size=300).json()
    path = [base64.b64decode(h) for h in proof["inclusion_path"]]
    leaf = chain.leaf_hash(entries[99]["hash"])
    assert chain.verify_inclusion(leaf, 99, 300, path, reference.get_root(300))
    assert proof["checkpoint"] is None  # no checkpoint signs a tree of 300
    for first, second in [(0, 5), (1, 600), (5, 5), (255, 256), (256, 512), (300, 599),
                          (511, 600), (7, 13), (599, 600)]:  # fmt: skip
        answer = api(client, protocol, "consistency", first=first, second=second).json()
        path = [base64.b64decode(h) for h in answer["consistency_path"]]
        old = reference.get_root(first) if first else chain.EMPTY_ROOT
        assert chain.verify_consistency(first, second, path, old, reference.get_root(second))


# Committed rows: on PostgreSQL the owner edits them from its own connection, as an attacker.
@pytest.mark.django_db(transaction=True)
def test_a_tampered_stored_root_gives_proofs_that_fail_and_the_signer_recovers(signed, client):
    protocol, entries, _checkpoint, reference = signed
    sql = (
        "UPDATE deviations_logtreenode SET hash = %s WHERE protocol_id = %s AND level IN (8, 9) "
        'AND "index" = 0'
    )
    if connection.vendor == "postgresql":  # as the owner, the guard off: an attacker's edit
        with owner_cursor() as cursor:
            cursor.execute("ALTER TABLE deviations_logtreenode DISABLE TRIGGER USER")
            cursor.execute(sql, ["00" * 32, protocol.pk])
            cursor.execute("ALTER TABLE deviations_logtreenode ENABLE TRIGGER USER")
    else:
        with connection.cursor() as cursor:
            cursor.execute(sql, ["00" * 32, protocol.pk])
    proof = api(client, protocol, "inclusion", seq=400).json()
    path = [base64.b64decode(h) for h in proof["inclusion_path"]]
    leaf = chain.leaf_hash(entries[399]["hash"])
    assert not chain.verify_inclusion(leaf, 399, SIZE, path, reference.get_root(SIZE))
    # the signer does not trust the stored roots: it checks them against what it signed and
    # falls back to the entries, so a bad cache row cannot stop it
    bulk = bulk_log_more(protocol, entries, 10)
    assert checkpoint_write(protocol=protocol).seq == SIZE + len(bulk)
    more = [*entries, *({"hash": row.hash} for row in bulk)]
    for entry in more[SIZE:]:
        reference.append_entry(bytes.fromhex(entry["hash"]))
    assert checkpoints.latest_checkpoint(protocol=protocol).head_hash == (
        reference.get_root(SIZE + 10).hex()
    )


def bulk_log_more(protocol, entries, n):
    previous = entries[-1]
    rows = []
    for seq in range(len(entries) + 1, len(entries) + n + 1):
        entry = {**previous, "seq": seq, "prev_hash": previous["hash"],
                 "rationale": f"Response {seq} imported"}  # fmt: skip
        entry["hash"] = chain.entry_hash(entry)
        rows.append(
            LogEntry(
                protocol=protocol, protocol_code=protocol.code, seq=seq,
                recorded_at=datetime.strptime(entry["recorded_at"], "%Y-%m-%dT%H:%M:%S.%fZ")
                .replace(tzinfo=UTC),
                actor_name="system", kind="import", rationale=entry["rationale"],
                refs=entry["refs"], outcome_visible=False, prev_hash=entry["prev_hash"],
                hash=entry["hash"],
            )
        )  # fmt: skip
        previous = entry
    LogEntry.objects.bulk_create(rows)
    return rows


@pytest.mark.parametrize(
    ("path", "query", "field"),
    [
        ("inclusion", {"seq": 601}, "seq"),
        ("inclusion", {"seq": 5, "tree_size": 4}, "seq"),
        ("inclusion", {"seq": "x"}, "seq"),
        ("inclusion", {"seq": 2**64}, "seq"),
        ("inclusion", {"seq": 1, "tree_size": 2**64}, "tree_size"),
        ("inclusion", {}, "seq"),
        ("consistency", {"first": 9, "second": 3}, "first"),
        ("consistency", {"first": 1, "second": 601}, "second"),
        ("consistency", {"first": -1, "second": 3}, "first"),
    ],
)
def test_bad_proof_requests_get_a_400_naming_the_field(signed, client, path, query, field):
    response = api(client, signed[0], path, **query)
    assert response.status_code == 400
    assert field in json.dumps(response.json())


def test_a_reviewer_gets_no_proof(protocol, reviewer, client):
    client.force_login(reviewer)
    assert api(client, protocol, "inclusion", seq=1).status_code == 404


def test_the_offline_verifier_checks_one_entrys_inclusion(signed, client, tmp_path):
    protocol = signed[0]
    (tmp_path / "proof.json").write_bytes(api(client, protocol, "inclusion", seq=321).content)
    result = offline(tmp_path, "--inclusion", "proof.json")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "entry 321 (" in result.stdout and f"in the log of {SIZE} entries" in result.stdout
    bundle = json.loads((tmp_path / "proof.json").read_text())
    bundle["entry"]["rationale"] = "Response 321 never existed"
    bundle["entry"]["hash"] = chain.entry_hash(bundle["entry"])  # rehashed, still not in the tree
    (tmp_path / "forged.json").write_text(json.dumps(bundle))
    result = offline(tmp_path, "--inclusion", "forged.json")
    assert result.returncode == 1 and "is NOT in the log" in result.stdout


def test_a_proof_carries_the_checkpoint_that_verifies_not_a_newer_forged_row(signed, client):
    """A row the runtime role could insert, newer than the real checkpoint and of the same
    size (or larger), is skipped: the proof is served against the real signed tree."""
    protocol, _entries, real, _reference = signed
    note = real.document["note"].replace(real.document["note"][-10:-2], "A" * 8)
    for size in (SIZE, SIZE + 50):
        LogCheckpoint.objects.create(
            protocol=protocol, seq=size, head_hash=real.head_hash, key_id=real.key_id,
            signed_at=real.signed_at, document={**real.document, "note": note},
        )  # fmt: skip
    for query in ({"seq": 7}, {"seq": 7, "tree_size": SIZE}):
        proof = api(client, protocol, "inclusion", **query).json()
        assert proof["tree_size"] == SIZE and proof["checkpoint"] == real.document["note"]
    # a size nobody signed: the proof, and no checkpoint
    unsigned = api(client, protocol, "inclusion", seq=7, tree_size=SIZE - 1).json()
    assert unsigned["tree_size"] == SIZE - 1 and unsigned["checkpoint"] is None


def test_a_proof_costs_five_queries_whatever_the_log(signed, client, django_assert_num_queries):
    # the session, the user, the protocol with the caller's roles, the entry with the log's
    # size and its checkpoint, the proof's stored roots and entry hashes
    with django_assert_num_queries(5):
        assert api(client, signed[0], "inclusion", seq=300).status_code == 200


def test_an_outsider_and_an_anonymous_caller_get_no_proof(signed, client, outsider):
    protocol = signed[0]
    client.force_login(outsider)
    assert api(client, protocol, "inclusion", seq=1).status_code == 404
    client.logout()
    assert api(client, protocol, "inclusion", seq=1).status_code in (401, 403)


def test_the_migration_to_16_entry_blocks_stores_their_roots_for_an_existing_log(protocol):
    """deviations 0007 over a log whose roots were kept from 256 entries up (as before it): the
    roots of its 16- to 128-entry subtrees, each the MTH of its entries, and nothing else."""
    entries = bulk_log(protocol, SIZE)
    migration = importlib.import_module(
        "apps.deviations.migrations.0007_store_subtree_roots_from_16_entries"
    )
    migration.store_lower_roots(django_apps, None)
    migration.store_lower_roots(django_apps, None)  # run twice: nothing duplicated
    stored = {(n.level, n.index): n.hash for n in LogTreeNode.objects.filter(protocol=protocol)}
    assert set(stored) == {(level, i) for level in range(4, 8) for i in range(SIZE >> level)}
    leaves = [chain.leaf_hash(e["hash"]) for e in entries]
    for (level, index), digest in stored.items():
        block = leaves[index << level : (index + 1) << level]
        assert digest == chain.merkle_root(block).hex()


def test_the_lean_path_answers_as_drfs_whole_path(signed, client):
    """A plain GET takes the lean path; ``format=json`` makes the same request take DRF's whole
    path (negotiation, Request, renderer): the same status, body and headers."""
    protocol = signed[0]
    lean = api(client, protocol, "inclusion", seq=300)
    full = api(client, protocol, "inclusion", seq=300, format="json")
    assert lean.status_code == full.status_code == 200
    assert lean.content == full.content
    for header in ("Content-Type", "Allow", "Vary", "X-Frame-Options", "Content-Security-Policy"):
        assert lean.headers.get(header) == full.headers.get(header), header
    html = api(client, protocol, "inclusion", seq=300, HTTP_ACCEPT="text/html")
    assert html.status_code == 200 and html["Content-Type"].startswith("text/html")  # browsable


def test_a_token_caller_gets_the_proof_and_a_bad_token_none(signed, auditor, outsider):
    protocol = signed[0]
    anonymous = Client()
    good = Token.objects.create(user=auditor)
    proof = api(anonymous, protocol, "inclusion", seq=9, HTTP_AUTHORIZATION=f"Token {good.key}")
    assert proof.status_code == 200 and proof.json()["seq"] == 9
    bad = api(anonymous, protocol, "inclusion", seq=9, HTTP_AUTHORIZATION="Token nope")
    assert bad.status_code in (401, 403)  # DRF: 403 when the session scheme is listed first
    stranger = Token.objects.create(user=outsider)
    refused = api(anonymous, protocol, "inclusion", seq=9, HTTP_AUTHORIZATION=f"Token {stranger}")
    assert refused.status_code == 404


def test_an_inactive_member_gets_no_proof(signed, auditor, client):
    protocol = signed[0]
    auditor.is_active = False
    auditor.save(update_fields=["is_active"])
    assert api(client, protocol, "inclusion", seq=9).status_code in (401, 403)


def test_a_refused_proof_request_counts_once_against_the_rate(signed, client, outsider):
    """A refusal is answered by DRF's whole path after the lean one gave up: the user's throttle
    sees one request, not two."""
    protocol = signed[0]
    client.force_login(outsider)
    cache.clear()
    assert api(client, protocol, "inclusion", seq=9).status_code == 404
    assert len(cache.get(f"throttle_user_{outsider.pk}")) == 1


def test_answered_proofs_count_against_the_rate_and_the_next_gets_a_429(
    signed, client, auditor, monkeypatch
):
    """The lean path answers successful reads itself: it still applies the view's throttles, so
    a caller past the rate gets DRF's 429 with Retry-After, and each answered proof counts once."""
    from rest_framework.throttling import UserRateThrottle

    protocol = signed[0]
    monkeypatch.setattr(UserRateThrottle, "THROTTLE_RATES", {"user": "3/minute", "anon": None})
    cache.clear()
    client.force_login(auditor)
    answers = [api(client, protocol, "inclusion", seq=seq).status_code for seq in (1, 2, 3, 4)]
    assert answers == [200, 200, 200, 429]
    assert len(cache.get(f"throttle_user_{auditor.pk}")) == 3
    refused = api(client, protocol, "inclusion", seq=5)
    assert refused.status_code == 429 and "Retry-After" in refused


def test_the_lean_path_applies_the_views_permission_classes(signed, client, auditor, monkeypatch):
    """A permission class that refuses is honoured on the lean path too (the full path answers
    with its 403), not only IsAuthenticated's rule the lean path's active-user check mirrors."""
    from rest_framework.permissions import BasePermission

    from apps.deviations.apis import InclusionProofApi

    class Never(BasePermission):
        def has_permission(self, request, view):
            return False

    protocol = signed[0]
    client.force_login(auditor)
    assert api(client, protocol, "inclusion", seq=1).status_code == 200
    monkeypatch.setattr(InclusionProofApi, "permission_classes", [Never])
    assert api(client, protocol, "inclusion", seq=1).status_code == 403


@pytest.mark.parametrize("revoke", ["token deleted", "user deactivated"])
def test_a_token_revoked_in_another_process_reads_no_more_proofs(signed, auditor, revoke):
    """The proof reads its caller's token from a per-process cache; the access query checks
    the token again, so a revocation made elsewhere (here: SQL that no signal of this process
    sees) refuses the very next request, on the lean path and the full one alike."""
    protocol = signed[0]
    key = Token.objects.create(user=auditor).key
    caller = Client(HTTP_AUTHORIZATION=f"Token {key}")
    assert api(caller, protocol, "inclusion", seq=9).status_code == 200  # now cached
    with connection.cursor() as cursor:
        if revoke == "token deleted":
            cursor.execute("DELETE FROM authtoken_token WHERE key = %s", [key])
        else:
            cursor.execute("UPDATE accounts_user SET is_active = FALSE WHERE id = %s", [auditor.pk])
    for query in ({"seq": 9}, {"seq": "x"}):  # the lean path, and the full one (a bad seq)
        refused = api(caller, protocol, "inclusion", **query)
        assert refused.status_code in (401, 403), refused.content
        assert b"inclusion_path" not in refused.content
    # Nor does it learn whether a protocol exists.
    unknown = caller.get("/api/v1/protocols/NO-SUCH/log/proof/inclusion", {"seq": 1})
    assert unknown.status_code in (401, 403)
