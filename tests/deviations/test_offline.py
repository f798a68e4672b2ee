"""The offline verifier: a script (standard library, and `cryptography` for signatures) that
checks an exported JSONL log on its own, against a pinned log key.

It is run here as an auditor would: a copy of the downloaded file, outside the project, under
``python -I -S`` (no site-packages, so no Django; no project on the path) with only
`cryptography` added (``tests/deviations/offline.py``).
"""

import ast
import base64
import json
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from apps.deviations import chain
from apps.deviations.checkpoints import checkpoint_write, signing_key
from apps.deviations.selectors import chain_verify
from tests.deviations.offline import run_script

pytestmark = pytest.mark.django_db


@pytest.fixture
def offline_script(tmp_path, client, auditor) -> Path:
    """The verifier as an auditor gets it: downloaded from /logs/verify_log.py."""
    client.force_login(auditor)
    response = client.get("/logs/verify_log.py")
    assert response.status_code == 200
    script = tmp_path / "verify_log.py"
    script.write_bytes(b"".join(response.streaming_content))
    return script


def export_jsonl(client, protocol, folder: Path, *, sign: bool = True) -> Path:
    """The JSONL export; ``sign``: after signing a checkpoint of the log (its first line)."""
    if sign:
        checkpoint_write(protocol=protocol)
    response = client.get(f"/protocols/{protocol.code}/log.jsonl")
    assert response.status_code == 200
    path = folder / f"{protocol.code}-deviation-log.jsonl"
    path.write_bytes(b"".join(response.streaming_content))
    return path


def run_offline(script: Path, *args: str, pinned: bool = True) -> subprocess.CompletedProcess:
    key = ["--public-key", signing_key().public_b64] if pinned else []
    return run_script(script, *args, *key)


def test_the_offline_verifier_imports_only_the_standard_library_and_cryptography():
    """`cryptography` (for the Ed25519 signatures) is imported only inside functions, so the
    module itself, its hashing and its Merkle proofs load with the standard library alone."""
    tree = ast.parse(Path(chain.__file__).read_text(encoding="utf-8"))
    optional = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            optional |= {id(child) for child in ast.walk(node)}
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names = {node.module.split(".")[0]}
        else:
            continue
        if names == {"cryptography"}:
            assert id(node) in optional, "cryptography is imported only where signatures are"
            continue
        imported |= names
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported


def test_the_downloaded_script_is_the_servers_verifier(offline_script):
    assert offline_script.read_bytes() == Path(chain.__file__).read_bytes()


def _non_ascii_log(protocol, append):
    append(protocol, 3, rationale="Ausschluss: Episode 12 — «Plattformverlust» 🧪\nzweite Zeile")
    append(
        protocol,
        2,
        refs=[{"type": "item", "id": "B-ß-7", "label": "Élément №7 “hors bande”"}],
        occurred_on=date(2026, 11, 2),
    )
    append(protocol, 1, actor=None, kind="platform_loss", rationale="ε-Rauschen\u2028Trenner\t!")


def test_the_offline_verifier_agrees_with_the_server_on_an_intact_log(
    client, auditor, protocol, append, offline_script, tmp_path
):
    _non_ascii_log(protocol, append)
    export = export_jsonl(client, protocol, tmp_path)
    result = run_offline(offline_script, str(export))
    server = chain_verify(protocol=protocol)
    assert server.ok and server.verified_through == 6
    assert result.returncode == 0, result.stderr
    first, *details = result.stdout.splitlines()
    assert first == f"{protocol.code}: {server.summary()}"
    assert f"Merkle tree of 6 entries, root {server.root_hash}" in details[0]
    assert "checkpoint of 6 entries" in details[1] and "signed by the pinned log key" in details[1]


def test_without_a_pinned_key_it_refuses_to_say_anything_and_exits_non_zero(
    client, auditor, protocol, append, offline_script, tmp_path
):
    """Issue 33 Why 3: the key inside a checkpoint proves nothing about who signed it."""
    append(protocol, 2)
    export = export_jsonl(client, protocol, tmp_path)
    result = run_offline(offline_script, str(export), pinned=False)
    assert result.returncode == 2
    assert "a pinned log key is required" in result.stderr and not result.stdout
    without = run_script(offline_script, str(export), "--public-key", signing_key().public_b64,
                         with_cryptography=False)  # fmt: skip
    assert without.returncode == 2 and "needs the `cryptography` package" in without.stderr


def test_a_log_signed_by_another_key_is_refused(
    client, auditor, protocol, append, offline_script, tmp_path, settings
):
    """An export whose checkpoint an attacker signed with their own key: not verified."""
    append(protocol, 3)
    pinned = signing_key().public_b64
    settings.LOG_SIGNING_KEY = base64.b64encode(bytes(range(32))).decode()
    export = export_jsonl(client, protocol, tmp_path)
    result = run_script(offline_script, str(export), "--public-key", pinned)
    assert result.returncode == 1
    assert "not signed by a pinned log key" in result.stdout


def test_an_export_with_no_signed_checkpoint_is_not_called_verified(
    client, auditor, protocol, append, offline_script, tmp_path
):
    append(protocol, 2)
    export = export_jsonl(client, protocol, tmp_path, sign=False)
    result = run_offline(offline_script, str(export))
    assert result.returncode == 1
    assert "no checkpoint signed by the pinned key covers this log" in result.stdout


def test_offline_and_server_encoders_give_identical_hashes_on_the_same_export(
    client, auditor, protocol, append, offline_script, tmp_path
):
    _non_ascii_log(protocol, append)
    export = export_jsonl(client, protocol, tmp_path)
    raw = export.read_bytes()
    assert raw.isascii()  # non-ASCII travels as \u escapes, so no reader can split a line
    lines = [json.loads(line) for line in raw.split(b"\n") if line]
    stored = [line["hash"] for line in lines if "seq" in line]  # the first is the checkpoint
    # The server computed these with apps.core.canonical when appending; recompute them with the
    # script's own encoder in a process that cannot import the project or Django.
    recompute = (
        "import importlib.util, json, sys\n"
        "sys.path.insert(0, '.')  # the folder the script was downloaded to, nothing else\n"
        "import verify_log\n"
        "lines = [json.loads(line) for line in open(sys.argv[1], 'rb')]\n"
        "hashes = [verify_log.entry_hash(line) for line in lines if 'seq' in line]\n"
        "print(json.dumps({'hashes': hashes,\n"
        "                  'django': importlib.util.find_spec('django') is not None,\n"
        "                  'project': importlib.util.find_spec('apps') is not None}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", recompute, str(export)],
        cwd=offline_script.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"hashes": stored, "django": False, "project": False}


def test_the_offline_verifier_names_a_changed_line_and_exits_non_zero(
    client, auditor, protocol, append, offline_script, tmp_path
):
    append(protocol, 8)
    export = export_jsonl(client, protocol, tmp_path)
    lines = export.read_text("utf-8").splitlines(keepends=True)
    assert '"seq":5' in lines[5]  # line 0 is the checkpoint
    lines[5] = lines[5].replace("Entry 5", "Entry 6", 1)  # one byte of entry 5's rationale
    export.write_text("".join(lines), "utf-8")
    result = run_offline(offline_script, str(export))
    assert result.returncode == 1
    assert result.stdout.startswith(f"{protocol.code}: broken at entry 5: hash does not match")


def test_the_offline_verifier_names_an_unreadable_line(
    client, auditor, protocol, append, offline_script, tmp_path
):
    append(protocol, 4)
    export = export_jsonl(client, protocol, tmp_path)
    data = bytearray(export.read_bytes())
    third = data.index(b'"seq":3')
    data[third] = 0xFF  # not UTF-8 any more
    export.write_bytes(bytes(data))
    result = run_offline(offline_script, str(export))
    assert result.returncode == 1
    assert "broken at entry 3: entry 3 cannot be read: line 4" in result.stdout


def test_the_offline_verifier_checks_anchors_seen_earlier(
    client, auditor, protocol, append, offline_script, tmp_path
):
    append(protocol, 3)
    checkpoint_write(protocol=protocol)
    entries = append(protocol, 2)
    export = export_jsonl(client, protocol, tmp_path, sign=False)  # its checkpoint: 3 entries
    assert (
        run_offline(offline_script, str(export), "--expect", f"5={entries[1].hash}").returncode == 0
    )
    short = tmp_path / "short.jsonl"
    short.write_text("".join(export.read_text("utf-8").splitlines(keepends=True)[:4]), "utf-8")
    result = run_offline(offline_script, str(short), "--expect", f"5={entries[1].hash}")
    assert result.returncode == 1
    assert "entry 5 was seen before, but the log ends at entry 3" in result.stdout


def test_a_missing_export_file_exits_with_status_two(offline_script, tmp_path):
    result = run_offline(offline_script, str(tmp_path / "absent.jsonl"))
    assert result.returncode == 2
    assert "cannot be read" in result.stderr


def test_the_script_also_runs_from_a_plain_copy_of_the_module(
    tmp_path, protocol, append, client, auditor
):
    append(protocol, 2)
    client.force_login(auditor)
    export = export_jsonl(client, protocol, tmp_path)
    copy = tmp_path / "chain.py"
    shutil.copy(chain.__file__, copy)
    assert run_offline(copy, str(export)).returncode == 0


def test_a_csv_export_is_not_a_log_it_can_verify_and_exits_2_saying_so(
    client, auditor, protocol, append, offline_script, tmp_path
):
    """The CSV export is for reading: given it, the verifier says the file is not a JSONL export
    (exit 2, nothing verified) rather than reporting a tampered entry 1 (exit 1)."""
    append(protocol, 3)
    csv_export = tmp_path / "log.csv"
    csv_export.write_text("seq,kind,rationale\n1,deviation,Entry 1\n", "utf-8")
    result = run_offline(offline_script, str(csv_export))
    assert result.returncode == 2
    assert "not a JSONL export" in result.stderr and "broken" not in result.stdout
