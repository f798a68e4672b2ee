"""The tamper test: the tables' owner switches the guards off, changes one byte of one entry
with raw SQL and switches them on again. The server's verifier, ``verify_log``, the API, the log
page and the offline verifier on a fresh export all name exactly that entry."""

import os
import subprocess
import sys
from datetime import date
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection

from apps.deviations.checkpoints import checkpoint_write
from apps.deviations.selectors import chain_verify
from tests.dbroles import owner_cursor
from tests.deviations.offline import offline

# The entries are committed: the owner's connection, like an attacker's, sees only those.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

TAMPERED_SEQ = 6
ROOT = Path(__file__).resolve().parents[2]

# One byte of one field (or, for the two scalar fields, the smallest change they admit).
TAMPERING = {
    "rationale": "rationale = overlay(rationale placing 'X' from 1 for 1)",
    "actor_name": "actor_name = overlay(actor_name placing 'X' from 1 for 1)",
    "kind": "kind = overlay(kind placing 'D' from 1 for 1)",
    "refs": "refs = jsonb_set(refs, '{0,label}', to_jsonb(overlay(refs->0->>'label' placing 'X' "
    "from 1 for 1)))",
    "recorded_at": "recorded_at = recorded_at + interval '1 microsecond'",
    "occurred_on": "occurred_on = occurred_on + 1",
    "outcome_visible": "outcome_visible = NOT outcome_visible",
    "prev_hash": "prev_hash = overlay(prev_hash placing CASE WHEN left(prev_hash, 1) = '0' "
    "THEN '1' ELSE '0' END from 1 for 1)",
    "hash": "hash = overlay(hash placing CASE WHEN left(hash, 1) = '0' THEN '1' ELSE '0' END "
    "from 1 for 1)",
    "seq": "seq = seq + 1000",
}


def tamper(protocol, assignment: str) -> None:
    """As the owner role, on its own connection, as an attacker holding the migration
    credentials would: switch the table's triggers off, rewrite, switch them on again."""
    with owner_cursor() as cursor:
        cursor.execute("ALTER TABLE deviations_logentry DISABLE TRIGGER USER")
        cursor.execute(
            f"UPDATE deviations_logentry SET {assignment} WHERE protocol_id = %s AND seq = %s",
            [protocol.pk, TAMPERED_SEQ],
        )
        assert cursor.rowcount == 1
        cursor.execute("ALTER TABLE deviations_logentry ENABLE TRIGGER USER")


@pytest.fixture
def log(protocol, append):
    append(protocol, 10, occurred_on=date(2026, 11, 2))
    assert chain_verify(protocol=protocol).ok
    checkpoint_write(protocol=protocol)  # signed before the tampering, as a deployment's are
    return protocol


def test_without_switching_the_guards_off_even_the_owner_is_refused(log):
    with pytest.raises(DatabaseError, match="append-only"), owner_cursor() as cursor:
        cursor.execute(
            f"UPDATE deviations_logentry SET {TAMPERING['rationale']} WHERE protocol_id = %s",
            [log.pk],
        )


@pytest.mark.parametrize("field", list(TAMPERING))
def test_the_server_verifier_names_exactly_the_tampered_entry(log, field):
    tamper(log, TAMPERING[field])
    report = chain_verify(protocol=log)
    assert report.broken_at == TAMPERED_SEQ, report.summary()
    assert report.verified_through == TAMPERED_SEQ - 1


def test_every_verifier_names_the_tampered_entry_and_agrees_on_why(log, client, auditor, tmp_path):
    tamper(log, TAMPERING["rationale"])
    server = chain_verify(protocol=log)
    assert server.summary().startswith(f"broken at entry {TAMPERED_SEQ}: hash does not match")

    # manage.py verify_log: names it and exits non-zero
    out = StringIO()
    with pytest.raises(CommandError) as failed:
        call_command("verify_log", protocol=log.code, stdout=out)
    assert failed.value.returncode == 1
    assert out.getvalue().strip() == f"{log.code}: {server.summary()}"

    client.force_login(auditor)
    # the API
    api = client.get(f"/api/v1/protocols/{log.code}/log/verify").json()
    assert (api["ok"], api["broken_at"], api["reason"]) == (False, TAMPERED_SEQ, server.reason)
    # the log page
    page = client.get(f"/protocols/{log.code}/log/").content.decode()
    assert f'Chain broken at entry <a href="#entry-{TAMPERED_SEQ}">{TAMPERED_SEQ}</a>' in page

    # the offline verifier, on a fresh export, outside the project
    export = tmp_path / "log.jsonl"
    export.write_bytes(b"".join(client.get(f"/protocols/{log.code}/log.jsonl").streaming_content))
    result = offline(tmp_path, str(export))
    assert result.returncode == 1
    assert result.stdout.splitlines()[0] == f"{log.code}: {server.summary()}"


def test_manage_py_verify_log_exits_non_zero_on_a_tampered_committed_log(protocol, append):
    """The command as an operator runs it: a separate process, against committed data."""
    append(protocol, 8)
    database = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "DATABASE_URL": f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}"
        f"/{database['NAME']}",
    }
    manage = [sys.executable, str(ROOT / "manage.py"), "verify_log", "--protocol", protocol.code]

    intact = subprocess.run(manage, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert intact.returncode == 0, intact.stderr
    assert intact.stdout.startswith(f"{protocol.code}: verified through entry 8 at ")

    tamper(protocol, TAMPERING["kind"])
    broken = subprocess.run(manage, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert broken.returncode == 1
    assert f"{protocol.code}: broken at entry {TAMPERED_SEQ}: hash does not match" in broken.stdout
