"""Signed checkpoints of the log head (issue #18, deliverable 3): a whole-chain recompute, which
every chain verifier accepts, is caught by any checkpoint that left the database before it."""

import base64
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from io import StringIO
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.core.management import CommandError, call_command
from django.db import connection

from apps.deviations import chain, checkpoints
from apps.deviations.checkpoints import (
    CheckpointRefused,
    checkpoint_bytes,
    checkpoint_write,
    signing_key,
)
from apps.deviations.models import LogCheckpoint
from apps.deviations.selectors import chain_verify, entry_dicts
from apps.deviations.tasks import checkpoints_write_task
from tests.dbroles import owner_cursor

WITNESS_PORT = 18310  # this engineer's port range (18300-18399)


def _raw_key_b64() -> str:
    raw = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    return base64.b64encode(raw).decode()


def offline(tmp_path: Path, *args: str, isolated: bool = True) -> subprocess.CompletedProcess:
    """The verifier as an auditor runs it: a copy outside the project. ``isolated``: under
    ``python -I -S``, so with no site-packages (no `cryptography`)."""
    script = tmp_path / "verify_log.py"
    script.write_bytes(Path(chain.__file__).read_bytes())
    flags = ["-I", "-S"] if isolated else ["-I"]
    return subprocess.run(
        [sys.executable, *flags, str(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )


def recompute_whole_chain_from(protocol, seq: int, rationale: str) -> None:
    """The attack of issue #18: rewrite entry ``seq`` and recompute every hash after it, so the
    chain is valid again. As the owner with the guard off on PostgreSQL; plainly on SQLite."""
    entries = list(entry_dicts(protocol=protocol))
    rows = []
    previous = entries[seq - 2]["hash"] if seq > 1 else chain.GENESIS_HASH
    for entry in entries[seq - 1 :]:
        if entry["seq"] == seq:
            entry["rationale"] = rationale
        entry["prev_hash"] = previous
        entry["hash"] = previous = chain.entry_hash(entry)
        rows.append((entry["rationale"], entry["prev_hash"], entry["hash"], entry["seq"]))
    sql = (
        "UPDATE deviations_logentry SET rationale = %s, prev_hash = %s, hash = %s "
        f"WHERE protocol_id = {int(protocol.pk)} AND seq = %s"
    )
    if connection.vendor == "postgresql":
        with owner_cursor() as cursor:
            cursor.execute("ALTER TABLE deviations_logentry DISABLE TRIGGER USER")
            cursor.executemany(sql, rows)
            cursor.execute("ALTER TABLE deviations_logentry ENABLE TRIGGER USER")
    else:
        with connection.cursor() as cursor:
            cursor.executemany(sql, rows)


@pytest.mark.django_db
def test_a_checkpoint_signs_the_head_with_the_key_served_at_a_stable_url(protocol, append, client):
    append(protocol, 3)
    checkpoint = checkpoint_write(protocol=protocol)
    document = checkpoint.document
    head = chain_verify(protocol=protocol)
    assert (document["protocol"], document["seq"], document["hash"]) == (
        protocol.code,
        3,
        head.head_hash,
    )
    assert document["recorded_at"] == head.verified_through_at
    served = client.get("/logs/signing-key").json()  # no sign-in needed
    assert served["algorithm"] == "Ed25519"
    assert served["key_id"] == document["key_id"] == signing_key().key_id
    assert chain.checkpoint_signature(document, [served["public_key"]])[0] is True
    # a changed byte breaks the signature
    forged = {**document, "seq": 2}
    assert chain.checkpoint_signature(forged, [served["public_key"]])[0] is False
    # nothing new to sign: no second checkpoint of the same head
    assert checkpoint_write(protocol=protocol) is None
    append(protocol, 1)
    assert checkpoint_write(protocol=protocol).seq == 4


@pytest.mark.django_db
def test_an_auditor_downloads_one_and_every_export_carries_the_latest(
    protocol, append, client, auditor, tmp_path
):
    append(protocol, 2)
    client.force_login(auditor)
    assert client.get(f"/protocols/{protocol.code}/log/checkpoint.json").status_code == 404
    assert client.post(f"/api/v1/protocols/{protocol.code}/log/checkpoints").status_code == 201
    append(protocol, 2)
    download = client.get(f"/protocols/{protocol.code}/log/checkpoint.json")
    assert download.status_code == 200
    saved = json.loads(download.content)
    assert saved["seq"] == 2
    export = b"".join(client.get(f"/protocols/{protocol.code}/log.jsonl").streaming_content)
    first, *entries = export.decode().splitlines()
    assert json.loads(first) == saved and len(entries) == 4
    (tmp_path / "log.jsonl").write_bytes(export)
    # without `cryptography` (python -I -S): the chain is checked against it, the signature not
    result = offline(tmp_path, "log.jsonl")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "verified through entry 4" in result.stdout
    assert "signature not checked: install the `cryptography` package" in result.stdout
    # with it, and the key pinned from /logs/signing-key
    (tmp_path / "key.json").write_bytes(client.get("/logs/signing-key").content)
    result = offline(tmp_path, "log.jsonl", "--public-key", "key.json", isolated=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"signature valid, key {saved['key_id']}" in result.stdout


# Committed rows: on PostgreSQL the owner rewrites them from its own connection, as an attacker.
@pytest.mark.django_db(transaction=True)
def test_a_whole_chain_recompute_is_caught_by_a_saved_checkpoint(
    protocol, append, client, auditor, tmp_path
):
    append(protocol, 5)
    saved = checkpoint_write(protocol=protocol).document
    (tmp_path / "checkpoint.json").write_bytes(checkpoint_bytes(saved))
    append(protocol, 3)
    client.force_login(auditor)

    recompute_whole_chain_from(protocol, 3, "Nothing happened here.")

    # The chain alone cannot tell: it is whole again (the false assurance of "Why" 1).
    assert chain_verify(protocol=protocol).ok
    export = b"".join(client.get(f"/protocols/{protocol.code}/log.jsonl").streaming_content)
    entries_only = b"\n".join(export.splitlines()[1:]) + b"\n"
    (tmp_path / "rewritten.jsonl").write_bytes(entries_only)
    assert offline(tmp_path, "rewritten.jsonl").returncode == 0

    # A checkpoint that left the database before the rewrite catches it everywhere.
    why = f"but the checkpoint signed at {saved['signed_at']} says {saved['hash']}"
    out = StringIO()
    with pytest.raises(CommandError) as failed:
        call_command(
            "verify_log",
            protocol=protocol.code,
            checkpoint=[str(tmp_path / "checkpoint.json")],
            stdout=out,
        )
    assert failed.value.returncode == 1
    assert (
        f"{protocol.code}: broken at entry 5: hash is" in out.getvalue() and why in out.getvalue()
    )
    result = offline(tmp_path, "rewritten.jsonl", "--checkpoint", "checkpoint.json")
    assert result.returncode == 1
    assert "broken at entry 5" in result.stdout and why in result.stdout
    # the copy kept in the database (still there: this attacker left it) works the same way
    report = client.get(f"/api/v1/protocols/{protocol.code}/log/verify").json()
    assert (report["ok"], report["broken_at"]) == (False, 5)
    page = client.get(f"/protocols/{protocol.code}/log/").content.decode()
    assert "Chain broken at entry" in page
    # and nothing is ever signed over the rewrite
    with pytest.raises(CheckpointRefused):
        checkpoint_write(protocol=protocol)


@pytest.mark.django_db
def test_a_log_cut_short_before_a_checkpoint_is_refused(protocol, append, tmp_path):
    append(protocol, 4)
    saved = checkpoint_write(protocol=protocol).document
    entries = [chain.entry_line(e) for e in entry_dicts(protocol=protocol)][:2]
    (tmp_path / "short.jsonl").write_text("\n".join(entries) + "\n")
    (tmp_path / "checkpoint.json").write_bytes(checkpoint_bytes(saved))
    result = offline(tmp_path, "short.jsonl", "--checkpoint", "checkpoint.json")
    assert result.returncode == 1
    assert "covers entry 4, but the log ends at entry 2" in result.stdout


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_owners_whole_chain_recompute_is_caught_on_postgresql(protocol, append, tmp_path):
    append(protocol, 4)
    saved = checkpoint_write(protocol=protocol).document
    recompute_whole_chain_from(protocol, 2, "Rewritten by the owner.")
    assert chain_verify(protocol=protocol).ok
    report = chain_verify(protocol=protocol, checkpoints=[saved])
    assert report.broken_at == 4 and "rewritten after the checkpoint" in report.reason


@pytest.mark.django_db
def test_a_key_rotation_keeps_old_checkpoints_verifiable(protocol, append, settings, tmp_path):
    append(protocol, 2)
    old = checkpoint_write(protocol=protocol).document
    old_public = signing_key().public_b64
    settings.LOG_SIGNING_KEY = _raw_key_b64()
    settings.LOG_SIGNING_PREVIOUS_PUBLIC_KEYS = [old_public]
    append(protocol, 1)
    new = checkpoint_write(protocol=protocol).document
    assert new["key_id"] != old["key_id"]
    (tmp_path / "old.json").write_bytes(checkpoint_bytes(old))
    out = StringIO()
    call_command(
        "verify_log", protocol=protocol.code, checkpoint=[str(tmp_path / "old.json")], stdout=out
    )
    assert "verified through entry 3" in out.getvalue()
    settings.LOG_SIGNING_PREVIOUS_PUBLIC_KEYS = []  # the old key no longer trusted
    with pytest.raises(CommandError, match="not a trusted key"):
        call_command("verify_log", protocol=protocol.code, checkpoint=[str(tmp_path / "old.json")])


@pytest.mark.django_db
def test_checkpoints_are_written_on_a_schedule_and_on_demand(protocol, append, settings):
    assert settings.CELERY_BEAT_SCHEDULE["deviations-checkpoints-write"]["task"] == (
        "deviations.checkpoints_write"
    )
    append(protocol, 2)
    assert checkpoints_write_task() == {"written": [protocol.code], "refused": []}
    assert checkpoints_write_task() == {"written": [], "refused": []}
    append(protocol, 1)
    out = StringIO()
    call_command("log_checkpoint", protocol=protocol.code, stdout=out)
    assert f"{protocol.code}: checkpoint at entry 3" in out.getvalue()
    assert LogCheckpoint.objects.filter(protocol=protocol).count() == 2


class _Witness(BaseHTTPRequestHandler):
    received: list[bytes] = []

    def do_POST(self):
        length = int(self.headers["Content-Length"])
        type(self).received.append(self.rfile.read(length))
        self.send_response(201)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def witness():
    _Witness.received = []
    server = HTTPServer(("127.0.0.1", WITNESS_PORT), _Witness)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield _Witness.received
    server.shutdown()
    server.server_close()


@pytest.mark.django_db
def test_each_checkpoint_is_delivered_to_the_external_witness(
    protocol, append, settings, tmp_path, witness, django_capture_on_commit_callbacks
):
    settings.LOG_WITNESS_URL = f"http://127.0.0.1:{WITNESS_PORT}/checkpoints"
    settings.LOG_WITNESS_DIR = str(tmp_path / "witness")
    append(protocol, 2)
    with django_capture_on_commit_callbacks(execute=True):
        checkpoint = checkpoint_write(protocol=protocol)
    body = checkpoint_bytes(checkpoint.document)
    assert witness == [body]
    (written,) = (tmp_path / "witness").iterdir()
    assert written.read_bytes() == body
    assert written.name.startswith(f"{protocol.code}-2-{checkpoint.key_id}-")
    assert chain.checkpoint_signature(json.loads(body), [signing_key().public_b64])[0] is True


@pytest.mark.django_db
def test_without_a_key_no_checkpoint_is_written(protocol, append, settings, client, auditor):
    settings.LOG_SIGNING_KEY = ""
    settings.LOG_SIGNING_KEY_FILE = ""
    checkpoints._cached.clear()
    append(protocol, 1)
    assert checkpoint_write(protocol=protocol) is None
    client.force_login(auditor)
    response = client.post(f"/api/v1/protocols/{protocol.code}/log/checkpoints")
    assert response.status_code == 400
    assert "signing key" in json.dumps(response.json())
