"""The binding stopping rule: nothing above a family's highest level, by any path."""

import html
import io

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from apps.items import services
from apps.items.models import Cell
from apps.items.selectors import CellState, design_grid, design_problems
from tests.factories import write_item
from tests.items.conftest import B_RULE, api, pages

pytestmark = pytest.mark.django_db

RULE_NAMED = "Family B's binding stopping rule forbids cells above L3"


def test_the_service_refuses_a_family_b_cell_at_l4_and_names_the_rule(family_b, scale, draft):
    item = services.item_create(version=draft, family=family_b, code="b-01")
    with pytest.raises(ValidationError) as refused:
        services.cell_save(item=item, level=scale["L4"], prompt="operative text")
    message = refused.value.message_dict["level"][0]
    assert RULE_NAMED in message
    assert B_RULE in message
    assert "b-01 at L4" in message
    assert not Cell.objects.filter(item=item).exists()


def test_an_absent_cell_above_the_rule_is_refused_too(family_b, scale, draft):
    item = services.item_create(version=draft, family=family_b, code="b-01")
    with pytest.raises(ValidationError, match="binding stopping rule"):
        services.cell_save(item=item, level=scale["L5"], absent=True, absent_reason="not written")


def test_cells_up_to_the_highest_level_are_allowed(family_b, scale, draft):
    item = write_item(draft, family_b, "b-01", [scale[c] for c in ("L0", "L1", "L2", "L3")])
    assert item.cells.count() == 4


def test_the_form_refuses_a_family_b_cell_at_l4(client, pi, family_b, scale, draft):
    services.item_create(version=draft, family=family_b, code="b-01")
    client.force_login(pi)
    url = f"{pages(draft)}/items/b-01/cells/L4/"
    page = html.unescape(client.get(url).content.decode())
    assert RULE_NAMED in page
    assert 'name="prompt"' not in page  # no form is offered
    response = client.post(url, {"prompt": "operative text", "key": "step"})
    assert response.status_code == 200
    assert RULE_NAMED in html.unescape(response.content.decode())
    assert not Cell.objects.filter(item__code="b-01").exists()


def test_the_api_refuses_a_family_b_cell_at_l4(client, pi, family_b, scale, draft):
    services.item_create(version=draft, family=family_b, code="b-01")
    client.force_login(pi)
    response = client.post(
        f"{api(draft)}/items/b-01/cells/L4",
        {"prompt": "operative text", "key": [{"text": "step", "executable": True}]},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert RULE_NAMED in response.json()["level"][0]
    assert not Cell.objects.filter(item__code="b-01").exists()


@pytest.mark.parametrize("level", ["L4", "L5"])
def test_the_import_refuses_a_family_b_row_above_l3(client, pi, family_b, scale, draft, level):
    csv = f"family,item,level,prompt,key\nB,b-01,{level},operative text,step\n"
    client.force_login(pi)
    upload = io.BytesIO(csv.encode())
    upload.name = "design.csv"
    response = client.post(f"{api(draft)}/import", {"file": upload})
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert [(e["row"], e["field"]) for e in errors] == [(2, "level")]
    assert RULE_NAMED in errors[0]["message"]
    assert not Cell.objects.filter(version=draft).exists()


def test_lowering_a_familys_highest_level_below_its_cells_is_refused(family_a, scale, draft):
    write_item(draft, family_a, "a-01", [scale["L4"], scale["L5"]])
    with pytest.raises(ValidationError) as refused:
        services.family_update(
            family=family_a,
            name=family_a.name,
            role=family_a.role,
            max_level="L3",
            stopping_rule="Stop at L3.",
        )
    message = refused.value.message_dict["max_level"][0]
    assert "a-01 at L4" in message and "a-01 at L5" in message
    family_a.refresh_from_db()
    assert family_a.max_level is None


def test_a_limit_without_the_rules_text_is_refused(draft, scale):
    with pytest.raises(ValidationError) as refused:
        services.family_create(version=draft, code="B", name="B", role="other", max_level="L3")
    assert "stopping_rule" in refused.value.message_dict


def test_moving_an_item_into_a_family_whose_rule_its_cells_break_is_refused(
    family_a, family_b, scale, draft
):
    item = write_item(draft, family_a, "a-01", [scale["L5"]])
    with pytest.raises(ValidationError, match=RULE_NAMED):
        services.item_update(item=item, family=family_b)
    item.refresh_from_db()
    assert item.family == family_a


def test_the_grid_shows_levels_above_the_rule_and_the_gate_rechecks(family_b, scale, draft):
    item = write_item(draft, family_b, "b-01", [scale[c] for c in ("L0", "L1", "L2", "L3")])
    grid = design_grid(draft)
    states = [gc.state for gc in grid.rows[0].cells]
    assert states[4:] == [CellState.ABOVE_RULE, CellState.ABOVE_RULE]
    assert not [p for p in design_problems(draft) if p.code == "stopping_rule_breach"]

    # A cell that got past every service (written straight into the table) is still caught.
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO items_cell (version_id, item_id, level_id, prompt, absent, absent_reason)"
            " VALUES (%s, %s, %s, 'smuggled', false, '')",
            [draft.pk, item.pk, scale["L5"].pk],
        )
    breaches = [p for p in design_problems(draft) if p.code == "stopping_rule_breach"]
    assert len(breaches) == 1
    assert "b-01" in breaches[0].message and B_RULE in breaches[0].message
    assert breaches[0].url.endswith("/items/b-01/cells/L5/")


def test_the_import_rechecks_the_rule_after_writing_and_rolls_back(
    monkeypatch, family_b, scale, draft
):
    # Were the row check ever bypassed, the import's last guard still refuses the whole file.
    from apps.items.services import transfer

    monkeypatch.setattr(transfer, "cell_validate", lambda **row: list(row["key"]))
    csv = b"family,item,level,prompt\nB,b-01,L0,fine\nB,b-01,L5,operative text\n"
    with pytest.raises(services.DesignImportRefused) as refused:
        services.design_import(version=draft, content=csv, fmt="csv")
    assert RULE_NAMED in refused.value.plan.errors[-1].message
    assert not Cell.objects.filter(version=draft).exists()
