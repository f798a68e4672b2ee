"""``manage.py import_responses``: the same importer as the page and the API."""

import json

import pytest
from django.core.management import CommandError, call_command

from apps.responses.models import Attempt
from tests.factories import answer_rows, csv_bytes

pytestmark = pytest.mark.django_db


def _run(*args):
    from io import StringIO

    out, err = StringIO(), StringIO()
    call_command("import_responses", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_the_command_imports_with_a_mapping_file(frozen, pi, tmp_path):
    data = tmp_path / "answers.csv"
    data.write_bytes(b"q,text\nit-1,a\nit-2,b\n")
    mapping = tmp_path / "mapping.json"
    mapping.write_text(
        json.dumps({"item": "q", "evaluand": {"const": "alpha"}, "response": "text"})
    )
    args = [
        str(data),
        "--protocol",
        frozen.protocol.code,
        "--version",
        "1.0",
        "--user",
        pi.username,
    ]
    out, _ = _run(*args, "--format", "csv", "--mapping", f"@{mapping}")
    assert "Imported answers.csv: 2 attempts" in out
    out, _ = _run(*args, "--mapping", f"@{mapping}")
    assert "already imported" in out
    assert Attempt.objects.count() == 2


def test_the_command_names_the_bad_row_and_imports_nothing(frozen, pi, tmp_path):
    rows = answer_rows(frozen)
    rows[3]["evaluand"] = "gamma"
    data = tmp_path / "answers.csv"
    data.write_bytes(csv_bytes(rows))
    args = [
        str(data),
        "--protocol",
        frozen.protocol.code,
        "--version",
        "1.0",
        "--user",
        pi.username,
    ]
    from io import StringIO

    err = StringIO()
    with pytest.raises(CommandError, match="Nothing was imported: 1 problem"):
        call_command("import_responses", *args, stderr=err)
    assert err.getvalue().startswith("row 5, evaluand: 'gamma' is not on this version's roster")
    assert not Attempt.objects.exists()


def test_the_command_refuses_someone_who_may_not_import(frozen, auditor, tmp_path):
    data = tmp_path / "answers.csv"
    data.write_bytes(csv_bytes(answer_rows(frozen)))
    with pytest.raises(CommandError, match="does not allow you to import"):
        _run(
            str(data),
            "--protocol",
            frozen.protocol.code,
            "--version",
            "1.0",
            "--user",
            auditor.username,
        )
