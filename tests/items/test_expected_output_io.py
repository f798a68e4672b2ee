"""Expected outputs for the oracle (issue 34 §8) through the cell API, hashed as the cell page
hashes them (``expected_output_sha256``: UTF-8 bytes for text, canonical JSON for JSON)."""

import hashlib
import json

import pytest

from apps.items import services
from apps.items.models import Cell
from tests.items.conftest import api

pytestmark = pytest.mark.django_db
JSON = "application/json"


@pytest.fixture
def item(draft, scale, family_a):
    return services.item_create(version=draft, family=family_a, code="a-01")


def _cell() -> Cell:
    return Cell.objects.get(item__code="a-01", level__code="L5")


def test_the_cell_api_writes_keeps_and_clears_an_expected_output(client, pi, draft, item):
    client.force_login(pi)
    url = f"{api(draft)}/items/a-01/cells/L5"
    text = "Paris — la capitale"
    saved = client.post(
        url,
        {"prompt": "Capital?", "expected_kind": "text", "expected_output": text},
        content_type=JSON,
    )
    assert saved.status_code == 200, saved.content
    answer = saved.json()
    assert answer["expected_kind"] == "text" and answer["expected_output"] == text
    assert answer["expected_sha256"] == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert _cell().expected_sha256 == answer["expected_sha256"]

    kept = client.post(url, {"prompt": "Capital city?"}, content_type=JSON).json()
    assert kept["expected_output"] == text  # omitted: kept as it was

    value = {"b": [1, 2], "a": "é"}
    as_json = client.post(
        url,
        {"prompt": "Capital?", "expected_kind": "json", "expected_output": value},
        content_type=JSON,
    ).json()
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert as_json["expected_sha256"] == hashlib.sha256(canonical.encode()).hexdigest()

    cleared = client.post(url, {"prompt": "Capital?", "expected_kind": ""}, content_type=JSON)
    assert cleared.json()["expected_sha256"] is None and _cell().expected_kind == ""


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"expected_kind": "text", "expected_output": {"not": "text"}}, "expected_output"),
        ({"expected_kind": "yaml", "expected_output": "x"}, "expected_kind"),
        ({"expected_output": "no kind"}, "expected_kind"),
        ({"expected_kind": "json"}, "expected_output"),
    ],
)
def test_a_bad_expected_output_is_refused_naming_the_field(client, pi, draft, item, body, field):
    client.force_login(pi)
    url = f"{api(draft)}/items/a-01/cells/L5"
    answer = client.post(url, {"prompt": "Capital?", **body}, content_type=JSON)
    assert answer.status_code == 400, answer.content
    assert field in answer.json()
    assert not Cell.objects.exists()


# The design import: expected_kind and expected_output columns (CSV) or fields (JSON).

CSV_HEADER = "family,item,domain,condition,level,prompt,absent,absent_reason,key,"
CSV_HEADER += "expected_kind,expected_output\n"


def _cells(version):
    return {
        (c.item.code, c.level.code): c
        for c in Cell.objects.filter(version=version).select_related("item", "level")
    }


def test_the_design_import_reads_expected_outputs_from_csv_and_json(pi, family_a, draft):
    rows = [
        'A,a-01,d,,L0,Capital?,no,,unit,text,"Paris, France"',
        'A,a-01,d,,L5,Capital as JSON?,no,,unit,json,"{""city"": ""Paris"", ""n"": 1}"',
        "A,a-02,d,,L0,No oracle here,no,,unit,,",
    ]
    content = (CSV_HEADER + "\n".join(rows) + "\n").encode()
    plan = services.design_import(version=draft, content=content, fmt="csv", actor=pi)
    cells = _cells(draft)
    assert (cells["a-01", "L0"].expected_kind, cells["a-01", "L0"].expected_output) == (
        "text",
        "Paris, France",
    )
    assert cells["a-01", "L5"].expected_output == {"city": "Paris", "n": 1}
    assert cells["a-02", "L0"].expected_sha256 is None
    # Hashed as the cell page hashes them, and shown in the plan.
    text_hash = hashlib.sha256(b"Paris, France").hexdigest()
    assert cells["a-01", "L0"].expected_sha256 == text_hash
    assert plan.rows[0].as_dict()["expected_sha256"] == text_hash

    # JSON: any JSON value; a file without the fields leaves the cells' outputs as they are.
    document = {
        "cells": [
            {
                "family": "A",
                "item": "a-01",
                "domain": "d",
                "level": "L0",
                "prompt": "Capital?",
                "key": ["unit"],
                "expected_kind": "json",
                "expected_output": ["Paris", 2],
            },
            {
                "family": "A",
                "item": "a-01",
                "domain": "d",
                "level": "L5",
                "prompt": "Capital as JSON?",
                "key": ["unit"],
            },
        ]
    }
    services.design_import(
        version=draft, content=json.dumps(document).encode(), fmt="json", actor=pi
    )
    cells = _cells(draft)
    assert cells["a-01", "L0"].expected_output == ["Paris", 2]
    assert cells["a-01", "L5"].expected_output == {"city": "Paris", "n": 1}  # kept


def test_a_bad_expected_output_in_a_design_file_is_named_by_row_and_field(pi, family_a, draft):
    rows = [
        "A,a-01,d,,L0,Capital?,no,,unit,json,{not json",
        "A,a-01,d,,L1,Capital?,no,,unit,yaml,x",
        "A,a-01,d,,L2,Capital?,no,,unit,,orphan output",
        "A,a-02,d,,L0,,yes,Not at this level,,text,an absent cell's output",
    ]
    content = (CSV_HEADER + "\n".join(rows) + "\n").encode()
    with pytest.raises(services.DesignImportRefused) as refused:
        services.design_import(version=draft, content=content, fmt="csv", actor=pi)
    assert [(e.row, e.field) for e in refused.value.plan.errors] == [
        (2, "expected_output"),
        (3, "expected_kind"),
        (4, "expected_kind"),
        (5, "expected_output"),
    ]
    assert "is not JSON" in refused.value.plan.errors[0].message
    assert not Cell.objects.filter(version=draft).exists()


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_the_design_export_writes_the_expected_outputs_the_import_reads_back(
    pi, family_a, draft, fmt
):
    rows = [
        'A,a-01,d,,L0,Capital?,no,,unit,text,"Paris, France"',
        'A,a-01,d,,L5,Capital as JSON?,no,,unit,json,"{""city"": ""Paris"", ""n"": 1}"',
        "A,a-02,d,,L0,No oracle here,no,,unit,,",
    ]
    services.design_import(
        version=draft, content=(CSV_HEADER + "\n".join(rows) + "\n").encode(), fmt="csv", actor=pi
    )
    before = {key: (c.expected_kind, c.expected_output) for key, c in _cells(draft).items()}
    exported = services.design_export(version=draft, fmt=fmt)
    assert "expected_kind" in exported and "Paris, France" in exported
    Cell.objects.filter(version=draft).update(expected_kind="", expected_output=None)
    services.design_import(version=draft, content=exported.encode(), fmt=fmt, actor=pi)
    after = {key: (c.expected_kind, c.expected_output) for key, c in _cells(draft).items()}
    assert after == before
    assert before[("a-01", "L5")] == ("json", {"city": "Paris", "n": 1})
