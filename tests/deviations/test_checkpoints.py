"""Signed checkpoints (issue #18 deliverable 3; issue 33 deliverable 4): C2SP tlog-checkpoint
signed notes of each log's RFC 6962 Merkle tree. A whole-chain recompute, which every chain
verifier accepts, is caught by any checkpoint that left the database before it; the signer, which
keeps what it signed outside the database, never signs over it."""

import base64
import hashlib
import json
import logging
from io import StringIO
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from django.core.management import CommandError, call_command
from django.db import connection
from pymerkle import InmemoryTree

from apps.deviations import chain, checkpoints
from apps.deviations.checkpoints import (
    CheckpointRefused,
    checkpoint_write,
    origin_for,
    signing_key,
)
from apps.deviations.models import LogCheckpoint
from apps.deviations.selectors import chain_verify, entry_dicts
from apps.deviations.tasks import checkpoints_write_task
from tests.dbroles import owner_cursor
from tests.deviations.offline import offline

WITNESS_PORT = 18310  # this engineer's port range (18300-18399)


def _raw_key_b64() -> str:
    raw = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    return base64.b64encode(raw).decode()


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


def pymerkle_root(protocol, size: int) -> bytes:
    """The RFC 6962 root of the first ``size`` entries by an independent implementation: each
    leaf's data is the 32 bytes of the entry's hash (docs/deviation-log.md)."""
    reference = InmemoryTree(algorithm="sha256")
    for entry in list(entry_dicts(protocol=protocol))[:size]:
        reference.append_entry(bytes.fromhex(entry["hash"]))
    return reference.get_root(size)


def note_of(document) -> chain.Note:
    return chain.parse_note(document["note"])


def save_note(path: Path, document) -> Path:
    path.write_text(document["note"], encoding="utf-8")
    return path


@pytest.mark.django_db
def test_a_checkpoint_is_a_c2sp_signed_note_of_the_logs_merkle_tree(protocol, append, client):
    append(protocol, 3)
    checkpoint = checkpoint_write(protocol=protocol)
    note = note_of(checkpoint.document)
    origin = origin_for(protocol.code)
    root = pymerkle_root(protocol, 3)
    # c2sp.org/tlog-checkpoint: origin, size, base64 root, each line ended; then the signature
    assert note.text == f"{origin}\n3\n{base64.b64encode(root).decode()}\n"
    assert checkpoint.document["note"].startswith(note.text + "\n\u2014 " + origin + " ")
    ((name, key_id, signature),) = note.signatures
    served = client.get("/logs/signing-key").json()  # no sign-in needed
    public = base64.b64decode(served["public_key"])
    # c2sp.org/signed-note: key name = origin, key id = SHA-256(name || 0x0A || 0x01 || key)[:4]
    assert name == origin
    assert key_id == hashlib.sha256(origin.encode() + b"\n\x01" + public).digest()[:4]
    Ed25519PublicKey.from_public_bytes(public).verify(signature, note.text.encode())
    assert served["public_key"] == signing_key().public_b64
    assert served["origin_prefix"] == origin.rsplit("/", 1)[0] + "/"
    # a changed byte breaks it
    forged = checkpoint.document["note"].replace("\n3\n", "\n2\n")
    with pytest.raises(ValueError, match="does not verify"):
        chain.checkpoint_note_verify(forged, [chain.VerifierKey(public)])
    # nothing new to sign: no second checkpoint of the same tree
    assert checkpoint_write(protocol=protocol) is None
    append(protocol, 1)
    assert checkpoint_write(protocol=protocol).seq == 4


@pytest.mark.django_db
def test_the_signer_keeps_what_it_signed_outside_the_database(protocol, append, settings):
    append(protocol, 2)
    checkpoint_write(protocol=protocol)
    state = checkpoints.signer_state(origin_for(protocol.code))
    assert Path(settings.LOG_SIGNING_STATE_DIR).is_dir()
    assert (state["size"], state["root"]) == (
        2,
        base64.b64encode(pymerkle_root(protocol, 2)).decode(),
    )
    # The signer extends its own state, whatever the database holds.
    append(protocol, 3)
    again = checkpoint_write(protocol=protocol)
    assert again.document["previous_size"] == 2 and again.seq == 5


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
    assert saved["size"] == 2 and saved["type"] == chain.NOTE_CHECKPOINT_TYPE
    export = b"".join(client.get(f"/protocols/{protocol.code}/log.jsonl").streaming_content)
    first, *entries = export.decode().splitlines()
    assert json.loads(first) == saved and len(entries) == 4
    (tmp_path / "log.jsonl").write_bytes(export)
    (tmp_path / "key.json").write_bytes(client.get("/logs/signing-key").content)
    result = offline(tmp_path, "log.jsonl", "--public-key", "key.json", pinned=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "verified through entry 4" in result.stdout
    assert "checkpoint of 2 entries" in result.stdout
    # the note alone, saved as a file, is a checkpoint the verifier takes too
    save_note(tmp_path / "cp.note", saved)
    result = offline(tmp_path, "log.jsonl", "--checkpoint", "cp.note")
    assert result.returncode == 0, result.stdout + result.stderr


# Committed rows: on PostgreSQL the owner rewrites them from its own connection, as an attacker.
@pytest.mark.django_db(transaction=True)
def test_a_whole_chain_recompute_is_caught_by_a_saved_checkpoint(
    protocol, append, client, auditor, tmp_path, caplog
):
    append(protocol, 5)
    saved = checkpoint_write(protocol=protocol).document
    save_note(tmp_path / "checkpoint.note", saved)
    append(protocol, 3)
    client.force_login(auditor)

    recompute_whole_chain_from(protocol, 3, "Nothing happened here.")

    # The chain alone cannot tell: it is whole again (the false assurance of "Why" 1).
    assert chain_verify(protocol=protocol).ok
    # A checkpoint that left the database before the rewrite catches it everywhere.
    why = "entries 1..5 do not give the tree root that the checkpoint of 5 entries signs"
    out = StringIO()
    with pytest.raises(CommandError) as failed:
        call_command(
            "verify_log",
            protocol=protocol.code,
            checkpoint=[str(tmp_path / "checkpoint.note")],
            stdout=out,
        )
    assert failed.value.returncode == 1
    assert f"{protocol.code}: broken at entry 5: {why}" in out.getvalue()
    export = b"".join(client.get(f"/protocols/{protocol.code}/log.jsonl").streaming_content)
    entries_only = b"\n".join(export.splitlines()[1:]) + b"\n"
    (tmp_path / "rewritten.jsonl").write_bytes(entries_only)
    result = offline(tmp_path, "rewritten.jsonl", "--checkpoint", "checkpoint.note")
    assert result.returncode == 1
    assert f"broken at entry 5: {why}" in result.stdout
    # the copy kept in the database (still there: this attacker left it) works the same way
    report = client.get(f"/api/v1/protocols/{protocol.code}/log/verify").json()
    assert (report["ok"], report["broken_at"]) == (False, 5)
    page = client.get(f"/protocols/{protocol.code}/log/").content.decode()
    assert "Chain broken at entry" in page
    # and nothing is ever signed over the rewrite, saying so, with an alarm
    with caplog.at_level(logging.CRITICAL), pytest.raises(CheckpointRefused) as refused:
        checkpoint_write(protocol=protocol)
    assert "no longer give the tree root signed for them" in refused.value.messages[0]
    assert "the log was rewritten" in refused.value.messages[0]
    assert any("ALARM" in record.getMessage() for record in caplog.records)
    alarms = Path(checkpoints.state_dir()) / "alarms.log"
    assert origin_for(protocol.code) in alarms.read_text(encoding="utf-8")


@pytest.mark.django_db
def test_a_log_cut_short_before_a_checkpoint_is_refused(protocol, append, tmp_path):
    append(protocol, 4)
    saved = checkpoint_write(protocol=protocol).document
    entries = [chain.entry_line(e) for e in entry_dicts(protocol=protocol)][:2]
    (tmp_path / "short.jsonl").write_text("\n".join(entries) + "\n")
    save_note(tmp_path / "checkpoint.note", saved)
    result = offline(tmp_path, "short.jsonl", "--checkpoint", "checkpoint.note")
    assert result.returncode == 1
    assert "covers entry 4, but the log ends at entry 2" in result.stdout


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_owners_erase_recompute_and_resign_is_refused_on_postgresql(protocol, append, tmp_path):
    """Issue 33 Why 2, as the owner: erase an entry, recompute the chain, delete the stored
    checkpoints. The signer still refuses: what it signed is outside the database."""
    append(protocol, 6)
    saved = checkpoint_write(protocol=protocol).document
    entries = list(entry_dicts(protocol=protocol))
    previous, rows = entries[1]["hash"], []
    for entry in entries[3:]:  # erase entry 3: every later one moves up and is re-hashed
        entry["seq"] -= 1
        entry["prev_hash"] = previous
        entry["hash"] = previous = chain.entry_hash(entry)
        rows.append((entry["seq"], entry["prev_hash"], entry["hash"], entry["seq"] + 1))
    with owner_cursor() as cursor:
        cursor.execute("ALTER TABLE deviations_logentry DISABLE TRIGGER USER")
        cursor.execute("ALTER TABLE deviations_logcheckpoint DISABLE TRIGGER USER")
        cursor.execute(
            "DELETE FROM deviations_logentry WHERE protocol_id = %s AND seq = 3", [protocol.pk]
        )
        cursor.executemany(
            "UPDATE deviations_logentry SET seq = %s, prev_hash = %s, hash = %s "
            f"WHERE protocol_id = {int(protocol.pk)} AND seq = %s",
            rows,
        )
        cursor.execute("DELETE FROM deviations_logcheckpoint WHERE protocol_id = %s", [protocol.pk])
        cursor.execute("ALTER TABLE deviations_logentry ENABLE TRIGGER USER")
        cursor.execute("ALTER TABLE deviations_logcheckpoint ENABLE TRIGGER USER")
    assert chain_verify(protocol=protocol).ok  # the chain alone is whole again
    append(protocol, 1)  # and the log grows, so there is something "new" to sign
    with pytest.raises(CheckpointRefused, match="rewritten"):
        checkpoint_write(protocol=protocol)
    assert not LogCheckpoint.objects.filter(protocol=protocol).exists()
    report = chain_verify(protocol=protocol, checkpoints=[saved])
    assert report.broken_at == 6 and "rewritten after the checkpoint" in report.reason


@pytest.mark.django_db
def test_a_key_rotation_keeps_old_checkpoints_verifiable(protocol, append, settings, tmp_path):
    append(protocol, 2)
    old = checkpoint_write(protocol=protocol)
    old_public = signing_key().public_b64
    settings.LOG_SIGNING_KEY = _raw_key_b64()
    settings.LOG_SIGNING_PREVIOUS_PUBLIC_KEYS = [old_public]
    append(protocol, 1)
    new = checkpoint_write(protocol=protocol)
    assert new.key_id != old.key_id and new.document["previous_size"] == 2
    save_note(tmp_path / "old.note", old.document)
    out = StringIO()
    call_command(
        "verify_log", protocol=protocol.code, checkpoint=[str(tmp_path / "old.note")], stdout=out
    )
    assert "verified through entry 3" in out.getvalue()
    settings.LOG_SIGNING_PREVIOUS_PUBLIC_KEYS = []  # the old key no longer trusted
    with pytest.raises(CommandError, match="not signed by a pinned log key"):
        call_command("verify_log", protocol=protocol.code, checkpoint=[str(tmp_path / "old.note")])


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
    assert f"{protocol.code}: checkpoint of 3 entries" in out.getvalue()
    assert LogCheckpoint.objects.filter(protocol=protocol).count() == 2


@pytest.mark.django_db
def test_a_forged_checkpoint_row_is_reported_skipped_and_stops_nothing(
    protocol, append, client, auditor, caplog
):
    """Issue 33 Why 4: the runtime role can insert a checkpoint row. One signed by another key
    (or not at all) is found invalid, reported, skipped, and signing goes on."""
    append(protocol, 3)
    real = checkpoint_write(protocol=protocol)
    attacker = Ed25519PrivateKey.generate()
    origin = origin_for(protocol.code)
    body = chain.checkpoint_body(origin, 9, b"\x07" * 32)
    public = attacker.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    note = (
        body
        + "\n"
        + chain.signature_line(
            origin, chain.note_key_id(origin, 1, public), attacker.sign(body.encode())
        )
    )
    forged = LogCheckpoint.objects.create(
        protocol=protocol,
        seq=9,
        head_hash=(b"\x07" * 32).hex(),
        key_id="00000000",
        signed_at=real.signed_at,
        document={**real.document, "size": 9, "note": note},
    )
    client.force_login(auditor)
    with caplog.at_level(logging.ERROR):
        report = client.get(f"/api/v1/protocols/{protocol.code}/log/verify").json()
    assert report["ok"] and report["verified_through"] == 3
    assert report["skipped_checkpoints"] == [
        {"id": forged.pk, "size": 9, "reason": "it is not signed by a pinned log key"}
    ]
    assert any("skipped" in record.getMessage() for record in caplog.records)
    page = client.get(f"/protocols/{protocol.code}/log/").content.decode()
    assert "1 stored checkpoint of this log does not verify" in page
    assert "size 9 (it is not signed by a pinned log key)" in page
    export = b"".join(client.get(f"/protocols/{protocol.code}/log.jsonl").streaming_content)
    assert json.loads(export.splitlines()[0])["size"] == 3  # the real one, not the forgery
    listed = client.get(f"/api/v1/protocols/{protocol.code}/log/checkpoints").json()
    assert [c["size"] for c in listed] == [3]
    append(protocol, 2)
    assert checkpoint_write(protocol=protocol).seq == 5  # signing is not stopped


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


@pytest.mark.django_db
def test_the_log_page_names_the_signing_key_as_the_signing_key_file_does(
    protocol, append, client, auditor
):
    """The page named a checkpoint's signer by its signed-note key ID (4 bytes, which hashes
    the log's origin) while /logs/signing-key lists the key by its own ``key_id``: an auditor
    comparing the two found different ids. The page now gives the key's ``key_id`` first."""
    append(protocol, 2)
    checkpoint = checkpoint_write(protocol=protocol)
    served = client.get("/logs/signing-key").json()
    client.force_login(auditor)
    html = client.get(f"/protocols/{protocol.code}/log/").content.decode()
    assert f"by the log key <code>{served['key_id']}</code>" in html
    assert f"<code>{checkpoint.key_id}</code>" in html
    assert served["key_id"] != checkpoint.key_id
