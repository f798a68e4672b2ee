"""The offline verifier: a standard-library script that checks an exported JSONL log on its own.

It is run here as an auditor would: a copy of the downloaded file, outside the project, under
``python -I -S`` (no site-packages, so no Django; no project on the path).
"""

import ast
import json
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from apps.deviations import chain
from apps.deviations.selectors import chain_verify

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


def export_jsonl(client, protocol, folder: Path) -> Path:
    response = client.get(f"/protocols/{protocol.code}/log.jsonl")
    assert response.status_code == 200
    path = folder / f"{protocol.code}-deviation-log.jsonl"
    path.write_bytes(b"".join(response.streaming_content))
    return path


def run_offline(script: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-I", "-S", str(script), *args],
        cwd=script.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_offline_verifier_imports_only_the_standard_library():
    """Apart from `cryptography`, imported only inside ``try: … except ImportError`` to check
    checkpoint signatures when it is installed (the chain is checked without it)."""
    tree = ast.parse(Path(chain.__file__).read_text(encoding="utf-8"))
    optional = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
            isinstance(handler.type, ast.Name) and handler.type.id == "ImportError"
            for handler in node.handlers
        ):
            optional |= {id(child) for child in ast.walk(node) if child not in node.handlers}
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names = {node.module.split(".")[0]}
        else:
            continue
        if names == {"cryptography"}:
            assert id(node) in optional, "cryptography must stay an optional import"
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
    assert result.stdout.strip() == f"{protocol.code}: {server.summary()}"


def test_offline_and_server_encoders_give_identical_hashes_on_the_same_export(
    client, auditor, protocol, append, offline_script, tmp_path
):
    _non_ascii_log(protocol, append)
    export = export_jsonl(client, protocol, tmp_path)
    raw = export.read_bytes()
    assert raw.isascii()  # non-ASCII travels as \u escapes, so no reader can split a line
    stored = [json.loads(line)["hash"] for line in raw.split(b"\n") if line]
    # The server computed these with apps.core.canonical when appending; recompute them with the
    # script's own encoder in a process that cannot import the project or Django.
    recompute = (
        "import importlib.util, json, sys\n"
        "sys.path.insert(0, '.')  # the folder the script was downloaded to, nothing else\n"
        "import verify_log\n"
        "hashes = [verify_log.entry_hash(json.loads(line)) for line in open(sys.argv[1], 'rb')]\n"
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
    lines[4] = lines[4].replace("Entry 5", "Entry 6", 1)  # one byte of entry 5's rationale
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
    assert "broken at entry 3: entry 3 cannot be read: line 3" in result.stdout


def test_the_offline_verifier_checks_anchors_seen_earlier(
    client, auditor, protocol, append, offline_script, tmp_path
):
    entries = append(protocol, 5)
    export = export_jsonl(client, protocol, tmp_path)
    assert (
        run_offline(offline_script, str(export), "--expect", f"5={entries[4].hash}").returncode == 0
    )
    short = tmp_path / "short.jsonl"
    short.write_text("".join(export.read_text("utf-8").splitlines(keepends=True)[:3]), "utf-8")
    result = run_offline(offline_script, str(short), "--expect", f"5={entries[4].hash}")
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
