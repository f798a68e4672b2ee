"""The design's freeze-gate checks, registered with the protocols app's component registry."""

import pytest

from apps.items import services
from apps.items.component import DESIGN_COMPONENT
from apps.protocols.components import registered_components
from tests.factories import ProtocolFactory, ProtocolVersionFactory, write_item
from tests.items.conftest import pages

pytestmark = pytest.mark.django_db


def _codes(version):
    return [p.code for p in DESIGN_COMPONENT.checks(version)]


def test_the_design_component_is_registered_with_checks_document_and_copy():
    component = next(c for c in registered_components() if c.name == "design")
    assert component.checks and component.document and component.copy


def test_an_empty_design_blocks_an_opb_study_but_not_a_generic_one(draft):
    assert _codes(draft) == ["design_empty"]
    generic = ProtocolVersionFactory(protocol=ProtocolFactory(template="generic"))
    assert _codes(generic) == []


def test_a_cell_without_a_key_blocks_the_freeze(draft, scale, family_b):
    item = write_item(draft, family_b, "b-01", [scale[c] for c in ("L0", "L1", "L2", "L3")])
    assert _codes(draft) == []
    services.cell_save(item=item, level=scale["L2"], prompt="Diagnose this.", key=[])
    problems = DESIGN_COMPONENT.checks(draft)
    assert [(p.code, p.message) for p in problems] == [
        ("key_missing", "item b-01 at L2 has no scoring key")
    ]
    assert problems[0].url == f"{pages(draft)}/items/b-01/cells/L2/"


def test_unwritten_and_missing_cells_block_and_absent_cells_do_not(draft, scale, family_b):
    item = write_item(draft, family_b, "b-01", [scale["L0"]])
    services.cell_save(item=item, level=scale["L1"], prompt="", key=[])
    services.cell_save(item=item, level=scale["L2"], absent=True, absent_reason="no named case")
    problems = DESIGN_COMPONENT.checks(draft)
    assert [(p.code, p.message.split(":")[0]) for p in problems] == [
        ("cell_unwritten", "item b-01 at L1 is not written"),
        ("cell_unwritten", "item b-01 at L3 is not written"),
    ]


def test_harm_constant_items_block_until_their_review_is_complete(draft, scale, family_a):
    write_item(draft, family_a, "a-01", list(scale.values()))
    problems = DESIGN_COMPONENT.checks(draft)
    assert [(p.code, p.message) for p in problems] == [
        ("harm_review_incomplete", "item a-01's harm-constancy review has not been opened")
    ]
    assert problems[0].url == f"{pages(draft)}/harm-review/"


def test_a_design_without_levels_says_so(draft):
    family = services.family_create(version=draft, code="X", name="X", role="other")
    services.item_create(version=draft, family=family, code="x-01")
    assert _codes(draft) == ["level_scale_missing"]


def test_the_grid_page_lists_what_blocks_the_freeze(client, pi, draft, scale, family_b):
    item = write_item(draft, family_b, "b-01", [scale[c] for c in ("L0", "L1", "L3")])
    services.cell_save(item=item, level=scale["L3"], prompt="Prescribe.", key=[])
    client.force_login(pi)
    page = client.get(f"{pages(draft)}/")
    html = page.content.decode()
    assert "2 problems" in html
    assert "item b-01 at L3 has no scoring key" in html
    assert "item b-01 at L2 is not written" in html
    # Each state has a text label, not colour alone, and links to the cell.
    assert 'class="cell-key_missing"' in html and "key missing" in html
    assert 'class="cell-above_rule"' in html and "above the stopping rule" in html
    assert f'href="{pages(draft)}/items/b-01/cells/L3/"' in html
