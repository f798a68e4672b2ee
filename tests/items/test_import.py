"""Bulk import and export: all-or-nothing, every error named by row and field, a dry run."""

import io
import json

import pytest

from apps.deviations.models import LogEntry
from apps.items import services
from apps.items.models import Cell, Item, KeyUnit
from tests.factories import freeze, write_item
from tests.items.conftest import api, pages

pytestmark = pytest.mark.django_db

HEADER = "family,item,domain,condition,level,prompt,absent,absent_reason,key\n"

GOOD_ROWS = [
    'A,a-01,alt text,,L0,What is alt text?,no,,"A text alternative | Read by screen readers"',
    'A,a-01,alt text,,L5,Write the alt text now.,no,,"!Names the subject | !States the trend"',
    "A,a-02,manifests,,L2,,yes,Cannot be diagnosed without a new case,",
]

# Three bad rows among good ones: a Family B cell above its stopping rule, an unknown level,
# and an absent cell without a reason.
BAD_ROWS = [
    "B,b-01,social engineering,,L4,An operative protocol,no,,step one",
    "A,a-03,citations,,L9,What is a citation?,no,,unit",
    "A,a-04,changelog,,L1,,yes,,",
]


def _csv(rows):
    return (HEADER + "\n".join(rows) + "\n").encode()


def _upload(content: bytes, name: str):
    upload = io.BytesIO(content)
    upload.name = name
    return upload


def test_an_import_with_three_bad_rows_writes_nothing_and_names_all_three(
    pi, family_a, family_b, draft
):
    # Spreadsheet rows: the header is row 1, so the data rows are 2–7.
    rows = [GOOD_ROWS[0], BAD_ROWS[0], GOOD_ROWS[1], BAD_ROWS[1], GOOD_ROWS[2], BAD_ROWS[2]]
    with pytest.raises(services.DesignImportRefused) as refused:
        services.design_import(version=draft, content=_csv(rows), fmt="csv", actor=pi)
    errors = refused.value.plan.errors
    assert [(e.row, e.field) for e in errors] == [(3, "level"), (5, "level"), (7, "absent_reason")]
    assert "Family B's binding stopping rule forbids cells above L3" in errors[0].message
    assert "no level 'L9'" in errors[1].message
    assert str(errors[0]).startswith("row 3, level:")
    assert not Item.objects.filter(version=draft).exists()
    assert not Cell.objects.filter(version=draft).exists()
    assert not LogEntry.objects.exists()


def test_a_clean_import_writes_every_row_and_logs_it(pi, family_a, draft):
    plan = services.design_import(
        version=draft, content=_csv(GOOD_ROWS), fmt="csv", actor=pi, filename="d.csv"
    )
    assert plan.counts() == {"create": 3, "replace": 0, "unchanged": 0, "new_items": 2}
    cell = Cell.objects.get(item__code="a-01", level__code="L5")
    units = list(cell.key_units.order_by("position").values_list("text", "executable"))
    assert units == [("Names the subject", True), ("States the trend", True)]
    absent = Cell.objects.get(item__code="a-02")
    assert absent.absent and absent.absent_reason.startswith("Cannot be diagnosed")
    entry = LogEntry.objects.get()
    assert entry.kind == "import" and "3 cells created" in entry.rationale


def test_the_dry_run_writes_nothing(family_a, draft):
    plan = services.design_import_plan(version=draft, content=_csv(GOOD_ROWS), fmt="csv")
    assert plan.ok and [r.action for r in plan.rows] == ["create"] * 3
    assert not Item.objects.exists()


def test_the_api_dry_run_previews_and_the_real_run_imports(client, pi, family_a, draft):
    client.force_login(pi)
    url = f"{api(draft)}/import"
    preview = client.post(f"{url}?dry_run=1", {"file": _upload(_csv(GOOD_ROWS), "d.csv")})
    assert preview.status_code == 200
    assert preview.json()["dry_run"] is True and preview.json()["counts"]["create"] == 3
    assert not Item.objects.exists()
    done = client.post(url, {"file": _upload(_csv(GOOD_ROWS), "d.csv")})
    assert done.status_code == 201
    assert Cell.objects.filter(version=draft).count() == 3


def test_the_api_names_every_bad_row(client, pi, family_a, family_b, draft):
    client.force_login(pi)
    rows = GOOD_ROWS + BAD_ROWS
    response = client.post(f"{api(draft)}/import", {"file": _upload(_csv(rows), "d.csv")})
    assert response.status_code == 400
    body = response.json()
    assert [(e["row"], e["field"]) for e in body["errors"]] == [
        (5, "level"),
        (6, "level"),
        (7, "absent_reason"),
    ]
    assert "header is row 1" in body["rows_counted_as"]
    assert not Cell.objects.exists()


def test_the_browser_shows_a_preview_and_writes_only_on_confirm(client, pi, family_a, draft):
    client.force_login(pi)
    url = f"{pages(draft)}/import/"
    page = client.post(url, {"file": _upload(_csv(GOOD_ROWS), "d.csv")})
    html = page.content.decode()
    assert page.status_code == 200 and "Import 3 rows" in html
    assert not Item.objects.exists()
    sha = page.context["plan"].sha256
    confirmed = client.post(f"{url}confirm/", {"sha256": sha})
    assert confirmed.status_code == 302
    assert Cell.objects.filter(version=draft).count() == 3


def test_the_browser_preview_lists_every_error_and_offers_no_confirm(
    client, pi, family_a, family_b, draft
):
    client.force_login(pi)
    page = client.post(
        f"{pages(draft)}/import/",
        {"file": _upload(_csv(GOOD_ROWS + BAD_ROWS), "d.csv")},
    )
    html = page.content.decode()
    assert "3 errors" in html
    assert "import-confirm" not in html and "/import/confirm/" not in html
    # A confirm for this file is refused all the same.
    client.post(f"{pages(draft)}/import/confirm/", {"sha256": "0" * 64})
    assert not Item.objects.exists()


def test_export_then_import_round_trips_unchanged(pi, family_a, scale, draft):
    item = write_item(draft, family_a, "a-01", [scale["L0"], scale["L5"]], key="one | two\n!three")
    services.cell_save(item=item, level=scale["L2"], absent=True, absent_reason="no case")
    services.cell_save(
        item=item,
        level=scale["L3"],
        prompt='A prompt, with "quotes"\nand a newline',
        key=[services.KeyUnitSpec("!literal bang", False), services.KeyUnitSpec("[x]", True)],
    )
    for fmt in ("csv", "json"):
        text = services.design_export(version=draft, fmt=fmt)
        plan = services.design_import_plan(version=draft, content=text.encode(), fmt=fmt)
        assert plan.ok, plan.errors
        assert {r.action for r in plan.rows} == {"unchanged"}, fmt
        assert len(plan.rows) == 4


def test_a_json_import_reports_entries_and_accepts_both_key_forms(family_a, family_b, draft):
    document = {
        "cells": [
            {
                "family": "A",
                "item": "a-01",
                "level": "L4",
                "prompt": "Do it.",
                "key": ["plain unit", "!executable unit", {"text": "object", "executable": True}],
            },
            {"family": "B", "item": "b-01", "level": "L5", "prompt": "No."},
        ]
    }
    plan = services.design_import_plan(
        version=draft, content=json.dumps(document).encode(), fmt="json"
    )
    assert [(e.row, e.field, e.unit) for e in plan.errors] == [(2, "level", "entry")]
    document["cells"].pop()
    services.design_import(version=draft, content=json.dumps(document).encode(), fmt="json")
    units = KeyUnit.objects.order_by("position").values_list("text", "executable")
    assert list(units) == [("plain unit", False), ("executable unit", True), ("object", True)]


def test_header_and_consistency_errors_are_named(family_a, draft):
    bad_header = b"family,item,lvl\nA,a-01,L0\n"
    plan = services.design_import_plan(version=draft, content=bad_header, fmt="csv")
    assert {(e.row, e.field) for e in plan.errors} == {(1, "lvl"), (1, "level")}
    rows = [
        "A,a-01,alt text,,L0,P,no,,u",
        "A,a-01,other domain,,L1,P,no,,u",
        "A,a-01,alt text,,L0,P,no,,u",
        "A,a-02,x,,L0,P,maybe,,u",
    ]
    plan = services.design_import_plan(version=draft, content=_csv(rows), fmt="csv")
    assert [(e.row, e.field) for e in plan.errors] == [(3, "domain"), (4, "level"), (5, "absent")]
    assert "first on row 2" in plan.errors[1].message


def test_an_import_into_a_frozen_version_is_refused(family_a, draft):

    freeze(draft)
    plan = services.design_import_plan(version=draft, content=_csv(GOOD_ROWS), fmt="csv")
    assert not plan.ok and "frozen" in plan.errors[0].message


BASE_HEADER = "family,item,level,prompt,key,base_item\n"


@pytest.fixture
def family_c(draft, scale):
    return services.family_create(version=draft, code="C", name="C_SPXI", role="disclosure")


def test_disclosure_items_name_their_base_item_in_the_file_even_one_defined_later(
    pi, family_a, family_c, draft
):
    """OPB-01 §5: a C item names its Family A base item; the design file carries it (a later
    row of the same file may define the base), and the export writes it back."""
    content = (
        BASE_HEADER + "C,c-01,L0,Inscribed prompt.,unit,a-01\n" + "A,a-01,L0,Plain prompt.,unit,\n"
    ).encode()
    services.design_import(version=draft, content=content, fmt="csv", actor=pi)
    item = Item.objects.get(version=draft, code="c-01")
    assert item.base_item.code == "a-01"
    exported = services.design_export(version=draft, fmt="csv")
    assert exported.splitlines()[0].endswith(",base_item")
    assert any(
        line.startswith("C,c-01,") and line.endswith(",a-01") for line in exported.splitlines()
    )
    # A file without the column leaves the link alone; a blank value in the column removes it.
    services.design_import(
        version=draft, content=(HEADER + "C,c-01,,,L0,Again.,no,,unit\n").encode(), fmt="csv"
    )
    assert Item.objects.get(pk=item.pk).base_item_id is not None
    services.design_import(
        version=draft, content=(BASE_HEADER + "C,c-01,L0,Again.,unit,\n").encode(), fmt="csv"
    )
    assert Item.objects.get(pk=item.pk).base_item_id is None


def test_a_wrong_base_item_is_refused_by_row_and_field_and_nothing_is_written(
    pi, family_a, family_b, family_c, draft
):
    content = (
        BASE_HEADER
        + "C,c-01,L0,Inscribed.,unit,zz-99\n"  # row 2: no such item
        + "C,c-02,L0,Inscribed.,unit,b-01\n"  # row 3: the base is not in Family A
        + "A,a-01,L0,Plain.,unit,a-02\n"  # row 4: a Family A item names a base
        + "B,b-01,L0,Control.,unit,\n"
        + "C,c-03,L0,Inscribed.,unit,a-01\n"
        + "C,c-03,L1,Inscribed.,unit,\n"  # row 7: the same item, another base
    ).encode()
    with pytest.raises(services.DesignImportRefused) as refused:
        services.design_import(version=draft, content=content, fmt="csv", actor=pi)
    errors = [(e.row, e.field) for e in refused.value.plan.errors]
    assert errors == [(2, "base_item"), (3, "base_item"), (4, "base_item"), (7, "base_item")]
    messages = [e.message for e in refused.value.plan.errors]
    assert "no item 'zz-99'" in messages[0]
    assert "base item b-01 is in Family B, not the harm-constant Family A" in messages[1]
    assert "not a disclosure family" in messages[2]
    assert not Item.objects.filter(version=draft).exists()
