"""The witness (C2SP tlog-witness; issue 33 deliverable 4): it cosigns a checkpoint only with a
valid consistency proof from the last one it cosigned, refuses a fork saying so, answers with
the spec's status codes; the signer delivers to it and reads its state back from it; the
offline verifier counts its cosignatures against a threshold and reads a witness directory."""

import base64
import hashlib
import threading
import urllib.request
from http.server import ThreadingHTTPServer

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from apps.deviations import chain, checkpoints
from apps.deviations.checkpoints import (
    CheckpointRefused,
    checkpoint_write,
    origin_for,
    sign_checkpoint,
    signing_key,
    witness_request,
)
from apps.deviations.management.commands.log_witness import make_handler
from apps.deviations.tree import tree_root
from tests.deviations.offline import offline
from tests.deviations.test_checkpoints import recompute_whole_chain_from
from tests.factories import make_witness

LEAVES = [hashlib.sha256(b"\x00" + bytes([n])).digest() for n in range(20)]
ORIGIN = "preregistry.local/log/W-01"


def request(size: int, old: int, leaves=LEAVES, proof=None, origin=ORIGIN) -> bytes:
    """An add-checkpoint body for the tree of ``leaves[:size]``, from ``old``."""
    note = sign_checkpoint(signing_key(), origin, size, chain.merkle_root(leaves[:size]))
    if proof is None:
        proof = [
            chain.fold_subtrees([chain.merkle_root(leaves[i << lv : (i + 1) << lv])
                                 for lv, i in chain.subtree_ranges(a, b)])
            for a, b in chain.consistency_ranges(old, size)
        ]  # fmt: skip
    lines = [f"old {old}"] + [base64.b64encode(h).decode() for h in proof]
    return ("\n".join(lines) + "\n\n" + note).encode()


def test_it_cosigns_a_consistent_extension_and_refuses_a_fork(tmp_path):
    witness = make_witness(tmp_path / "w")
    first = witness.add_checkpoint(request(5, 0))
    assert first.status == 200, first.body
    cosigned = chain.parse_note(
        sign_checkpoint(signing_key(), ORIGIN, 5, chain.merkle_root(LEAVES[:5]))
        + first.body.decode()
    )
    assert chain.cosignature_valid(cosigned, witness.name, witness.public_raw) is True
    assert chain.cosigners(cosigned, [chain.parse_verifier_key(witness.vkey)]) == [witness.name]
    # a consistent extension, with its proof: cosigned
    assert witness.add_checkpoint(request(13, 5)).status == 200
    # a stale old size: 409 with the size it holds, as text/x.tlog.size
    stale = witness.add_checkpoint(request(14, 5))
    assert (stale.status, stale.body, stale.content_type) == (409, b"13\n", "text/x.tlog.size")
    # a fork: the log rewrote leaf 3 and signs a bigger tree; no proof from 13 can verify
    forked = [*LEAVES[:3], b"\x09" * 32, *LEAVES[4:]]
    answer = witness.add_checkpoint(request(16, 13, leaves=forked))
    assert answer.status == 422
    assert b"a fork" in answer.body and b"does not extend the 13 entries" in answer.body
    # the same size with another root: a fork too
    same = witness.add_checkpoint(request(13, 13, leaves=forked, proof=[]))
    assert same.status == 422 and b"another tree of 13 entries" in same.body
    assert len(list((tmp_path / "w" / "refused").iterdir())) == 2  # kept as evidence
    assert witness.latest(ORIGIN)["size"] == 13  # never rolled back or forked


def test_it_answers_each_bad_request_with_the_specs_status(tmp_path):
    witness = make_witness(tmp_path / "w")
    assert witness.add_checkpoint(request(4, 0, origin="elsewhere.example/log")).status == 404
    stranger = Ed25519PrivateKey.generate()
    body = chain.checkpoint_body(ORIGIN, 4, chain.merkle_root(LEAVES[:4]))
    public = stranger.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    foreign = (
        body
        + "\n"
        + chain.signature_line(
            ORIGIN, chain.note_key_id(ORIGIN, 1, public), stranger.sign(body.encode())
        )
    )
    answer = witness.add_checkpoint(("old 0\n\n" + foreign).encode())
    assert answer.status == 403 and b"not signed by a key this witness trusts" in answer.body
    genuine = request(4, 0).decode()
    tampered = genuine.replace(base64.b64encode(chain.merkle_root(LEAVES[:4])).decode(),
                               base64.b64encode(b"\x01" * 32).decode())  # fmt: skip
    assert witness.add_checkpoint(tampered.encode()).status == 403
    assert witness.add_checkpoint(request(4, 5, proof=[])).status == 400  # old above size
    assert witness.add_checkpoint(b"old x\n\nnot a note").status == 400
    assert witness.add_checkpoint(request(4, 0, proof=[b"\x00" * 32])).status == 422
    assert witness.add_checkpoint(request(4, 0)).status == 200
    bad_proof = request(6, 4, proof=[b"\x00" * 32])
    assert witness.add_checkpoint(bad_proof).status == 422


@pytest.fixture
def witness_server(tmp_path):
    """The project's witness, served over HTTP as `manage.py log_witness` serves it."""
    witness = make_witness(tmp_path / "witness-state")
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(witness))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield witness, f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


@pytest.mark.django_db
def test_each_checkpoint_is_cosigned_by_the_witness_and_written_to_the_directory(
    protocol, append, settings, tmp_path, witness_server, django_capture_on_commit_callbacks,
    client, auditor,
):  # fmt: skip
    witness, url = witness_server
    settings.LOG_WITNESS_URL = url
    settings.LOG_WITNESS_DIR = str(tmp_path / "witness-dir")
    append(protocol, 3)
    with django_capture_on_commit_callbacks(execute=True):
        checkpoint_write(protocol=protocol)
    append(protocol, 4)
    with django_capture_on_commit_callbacks(execute=True):
        checkpoint_write(protocol=protocol)
    origin = origin_for(protocol.code)
    assert witness.latest(origin)["size"] == 7
    # the witness serves what it cosigned (GET <origin hash>/checkpoint)
    with urllib.request.urlopen(
        f"{url}/{hashlib.sha256(origin.encode()).hexdigest()}/checkpoint"
    ) as reply:
        served = chain.parse_note(reply.read().decode())
    assert chain.cosigners(served, [chain.parse_verifier_key(witness.vkey)]) == [witness.name]
    # the cosigned checkpoints are kept, and the export carries the latest cosigned one
    latest = checkpoints.latest_checkpoint(protocol=protocol)
    assert latest.seq == 7 and witness.name in latest.document["note"]
    notes = sorted((tmp_path / "witness-dir").glob("*.note"))
    assert [chain.parse_note(n.read_text()).checkpoint()[1] for n in notes] == [3, 7]
    client.force_login(auditor)
    export = tmp_path / "log.jsonl"
    export.write_bytes(
        b"".join(client.get(f"/protocols/{protocol.code}/log.jsonl").streaming_content)
    )
    args = ["log.jsonl", "--witness-dir", str(tmp_path / "witness-dir")]
    ok = offline(tmp_path, *args, "--witness-key", witness.vkey, "--witness-threshold", "1")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "witnessed through entry 7 by at least 1 witness(es)" in ok.stdout
    other = make_witness(tmp_path / "other", name="witness.test/w2")
    short = offline(tmp_path, *args, "--witness-key", witness.vkey, "--witness-key", other.vkey,
                    "--witness-threshold", "2")  # fmt: skip
    assert short.returncode == 1
    assert "no checkpoint the log extends carries cosignatures of 2 of the 2" in short.stdout


@pytest.mark.django_db(transaction=True)
def test_a_signer_without_its_state_reads_it_back_from_the_witness_and_refuses_a_rewrite(
    protocol, append, settings, tmp_path, witness_server, django_capture_on_commit_callbacks
):
    witness, url = witness_server
    settings.LOG_WITNESS_URL = url
    append(protocol, 6)
    with django_capture_on_commit_callbacks(execute=True):
        checkpoint_write(protocol=protocol)
    assert witness.latest(origin_for(protocol.code))["size"] == 6
    recompute_whole_chain_from(protocol, 2, "Rewritten.")
    # the signer's state is gone (a new machine, or an attacker who reached its files)
    settings.LOG_SIGNING_STATE_DIR = str(tmp_path / "fresh-state")
    append(protocol, 1)
    with pytest.raises(CheckpointRefused, match="rewritten"):
        checkpoint_write(protocol=protocol)
    # and the witness, offered the rewritten log from scratch, refuses it: 409, then 422
    origin = origin_for(protocol.code)
    note = sign_checkpoint(signing_key(), origin, 7, tree_root(protocol_id=protocol.pk, size=7))
    body = witness_request(protocol_id=protocol.pk, note=note, old_size=0, size=7)
    assert witness.add_checkpoint(body).status == 409
    body = witness_request(protocol_id=protocol.pk, note=note, old_size=6, size=7)
    answer = witness.add_checkpoint(body)
    assert answer.status == 422 and b"a fork" in answer.body
