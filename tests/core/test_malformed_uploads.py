"""Malformed uploads to the two import endpoints: the design import (items) and the response
import (responses), through the browser page and the API.

Every bad file gets a 4xx or a form error that names the problem (and its row or field where it
has one), and nothing is written: the counts of every row kind stay as they were.
"""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.deviations.models import LogEntry
from apps.items.models import Cell, Item, KeyUnit
from apps.responses.models import Attempt, Response, ResponseImport
from tests.factories import answer_rows, build_draft, csv_bytes, freeze

pytestmark = pytest.mark.django_db

DESIGN_HEADER = "family,item,domain,condition,level,prompt,absent,absent_reason,key"
DESIGN_ROW = "A,new-1,alt text,,L0,What is alt text?,no,,A text alternative"


def _counts():
    return {
        model.__name__: model.objects.count()
        for model in (Item, Cell, KeyUnit, Attempt, Response, ResponseImport, LogEntry)
    }


@pytest.fixture
def draft(protocol, pi):
    return build_draft(protocol=protocol, user=pi, label="2.0")


@pytest.fixture
def frozen(protocol, pi):
    return freeze(build_draft(protocol=protocol, user=pi), pi)


def _design_cases():
    return {
        "empty": (b"", "d.csv", "empty"),
        "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe\xfd" * 50, "d.csv", "UTF-8"),
        "latin-1": (
            f"{DESIGN_HEADER}\nA,new-1,caf\u00e9,,L0,Qu'est-ce qu'un caf\u00e9 ?,no,,u\n".encode(
                "latin-1"
            ),
            "d.csv",
            "UTF-8",
        ),
        "missing column": (
            b"family,item,domain,condition,prompt,absent,absent_reason,key\n"
            b"A,new-1,alt text,,What?,no,,unit\n",
            "d.csv",
            "level",
        ),
        "huge field": (
            f"{DESIGN_HEADER}\nA,new-1,alt text,,L0,{'x' * 300_000},no,,unit\n".encode(),
            "d.csv",
            "field larger than field limit",
        ),
        "duplicated rows": (
            f"{DESIGN_HEADER}\n{DESIGN_ROW}\n{DESIGN_ROW}\n".encode(),
            "d.csv",
            "appears twice (first on row 2)",
        ),
        "deeply nested key": (
            f"{DESIGN_HEADER}\nA,new-1,alt text,,L0,What?,no,,{'[' * 100_000}\n".encode(),
            "d.csv",
            "key",
        ),
        "nul character": (
            f"{DESIGN_HEADER}\nA,new-1,alt text,,L0,What\x00?,no,,unit\n".encode(),
            "d.csv",
            "NUL",
        ),
        "nul character in json": (
            b'[{"family": "A", "item": "new-1", "level": "L0", "prompt": "What\\u0000?"}]',
            "d.json",
            "NUL",
        ),
        "deeply nested json": (b"[" * 100_000, "d.json", "JSON"),
        "number too long": (
            b'[{"family": "A", "item": 1' + b"1" * 5000 + b"}]",
            "d.json",
            "JSON",
        ),
        "broken json": (b'[{"family": "A", "item": "new-1", ', "d.json", "JSON"),
        "json of the wrong shape": (b'{"cells": 7}', "d.json", "list of cells"),
    }


def _response_cases(version):
    rows = answer_rows(version)
    good = csv_bytes(rows)
    latin = [dict(r) for r in rows]
    latin[1]["response"] = "Une r\u00e9ponse caf\u00e9."
    missing = [{k: v for k, v in r.items() if k != "evaluand"} for r in rows]
    huge = [dict(r) for r in rows]
    huge[2]["response"] = "x" * (16 * 1024 * 1024 + 1)  # a completion may be 16 MiB, no more
    jsonl = [json.dumps(r) for r in rows]
    jsonl[3] = jsonl[3][:-5]
    nested = [json.dumps(r) for r in rows]
    nested[1] = "[" * 100_000
    # "²" passes str.isdigit and int() refuses it; int() refuses more than 4,300 digits.
    superscript = [dict(r) for r in rows]
    superscript[1]["repetition"] = "\u00b2"
    long_number = [dict(r) for r in rows]
    long_number[1]["repetition"] = "1" * 5000
    return {
        "empty": (b"", "a.csv", "empty"),
        "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe\xfd" * 50, "a.csv", "UTF-8"),
        "latin-1": (
            csv_bytes(latin).decode().encode("latin-1"),
            "a.csv",
            "UTF-8",
        ),
        "missing column": (csv_bytes(missing), "a.csv", "evaluand"),
        "huge field": (csv_bytes(huge), "a.csv", "field larger than field limit"),
        "duplicated rows": (good + good.split(b"\n", 1)[1], "a.csv", "already has an attempt"),
        "superscript repetition": (csv_bytes(superscript), "a.csv", "is not a repetition number"),
        "repetition past int's digits": (
            csv_bytes(long_number),
            "a.csv",
            "is not a repetition number",
        ),
        "broken jsonl line": ("\n".join(jsonl).encode(), "a.jsonl", "not valid JSON"),
        "deeply nested jsonl line": ("\n".join(nested).encode(), "a.jsonl", "not valid JSON"),
    }


def _text(response) -> str:
    if response.get("Content-Type", "").startswith("application/json"):
        return json.dumps(response.json(), ensure_ascii=False)
    return response.content.decode()


JSON_CASES = ["deeply nested json", "number too long", "nul character", "nul character in json"]
CASES = [
    "empty",
    "binary",
    "latin-1",
    "missing column",
    "huge field",
    "duplicated rows",
]


@pytest.mark.parametrize(
    "case",
    [*CASES, "deeply nested key", "broken json", "json of the wrong shape", *JSON_CASES],
    ids=lambda c: c.replace(" ", "-"),
)
@pytest.mark.parametrize("where", ["api", "api-dry-run", "page"])
def test_a_malformed_design_import_is_refused_by_name_and_writes_nothing(
    client, pi, draft, case, where
):
    content, name, expected = _design_cases()[case]
    client.force_login(pi)
    before = _counts()
    base = f"protocols/{draft.protocol.code}"
    if where == "page":
        url = f"/{base}/v/{draft.label}/design/import/"
    else:
        url = f"/api/v1/{base}/versions/{draft.label}/design/import"
        url += "?dry_run=1" if where == "api-dry-run" else ""
    response = client.post(url, {"file": SimpleUploadedFile(name, content)})
    text = _text(response)
    if where == "page":
        assert response.status_code == 200
        assert "/import/confirm/" not in text
    else:
        assert response.status_code == 400, text[:500]
    assert expected.lower() in text.lower(), text[:2000]
    assert _counts() == before


@pytest.mark.parametrize(
    "case",
    [
        *CASES,
        "superscript repetition",
        "repetition past int's digits",
        "broken jsonl line",
        "deeply nested jsonl line",
    ],
    ids=lambda c: c.replace(" ", "-"),
)
@pytest.mark.parametrize("where", ["api", "api-dry-run", "page"])
def test_a_malformed_response_import_is_refused_by_name_and_writes_nothing(
    client, pi, frozen, case, where
):
    content, name, expected = _response_cases(frozen)[case]
    client.force_login(pi)
    before = _counts()
    base = f"protocols/{frozen.protocol.code}"
    if where == "page":
        url = f"/{base}/v/{frozen.label}/responses/import/"
    else:
        url = f"/api/v1/{base}/versions/{frozen.label}/responses/import"
        url += "?dry_run=1" if where == "api-dry-run" else ""
    response = client.post(url, {"file": SimpleUploadedFile(name, content)})
    text = _text(response)
    if where == "page":
        assert response.status_code == 200
        assert "import/confirm" not in text
    else:
        assert response.status_code == 400, text[:500]
    assert expected.lower() in text.lower(), text[:2000]
    assert _counts() == before


@pytest.mark.parametrize("where", ["api", "page"])
@pytest.mark.parametrize("mapping", ["[" * 100_000, "[1, 2]", "{not json"])
def test_a_malformed_response_mapping_is_refused_and_writes_nothing(
    client, pi, frozen, where, mapping
):
    client.force_login(pi)
    before = _counts()
    base = f"protocols/{frozen.protocol.code}"
    url = (
        f"/{base}/v/{frozen.label}/responses/import/"
        if where == "page"
        else f"/api/v1/{base}/versions/{frozen.label}/responses/import"
    )
    upload = SimpleUploadedFile("a.csv", csv_bytes(answer_rows(frozen)))
    response = client.post(url, {"file": upload, "mapping": mapping})
    text = _text(response)
    assert response.status_code == (200 if where == "page" else 400), text[:500]
    assert "mapping" in text.lower() and "import/confirm" not in text
    assert _counts() == before


def test_the_design_csv_field_limit_holds_after_a_response_import(client, pi, draft, frozen):
    """The csv module's field limit is process-wide; a response import raising it for long
    completions must not let a design import read a 300,000-character prompt."""
    client.force_login(pi)
    huge = [dict(r) for r in answer_rows(frozen)]
    huge[0]["response"] = "x" * 200_000
    api = f"/api/v1/protocols/{frozen.protocol.code}/versions"
    assert (
        client.post(
            f"{api}/{frozen.label}/responses/import?dry_run=1",
            {"file": SimpleUploadedFile("a.csv", csv_bytes(huge))},
        ).status_code
        == 200
    )
    content, name, expected = _design_cases()["huge field"]
    before = _counts()
    response = client.post(
        f"{api}/{draft.label}/design/import", {"file": SimpleUploadedFile(name, content)}
    )
    assert response.status_code == 400
    assert expected in _text(response)
    assert _counts() == before
