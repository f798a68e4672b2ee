"""OPB-01 §2's L5 invariant as data: a cell declares the tools or connectors its key requires
(``Cell.requires_tools``), on its page and through the API; the frozen document carries the list
only when one is declared, and an amendment copies it."""

import pytest

from apps.items import services
from apps.items.component import design_copy, design_document
from apps.items.models import Cell
from tests.factories import ProtocolVersionFactory
from tests.items.conftest import api, pages

pytestmark = pytest.mark.django_db
JSON = "application/json"


@pytest.fixture
def item(draft, scale, family_a):
    return services.item_create(version=draft, family=family_a, code="a-01")


def _cell(level="L5"):
    return Cell.objects.get(item__code="a-01", level__code=level)


def test_the_cell_api_writes_and_reads_the_tools_a_key_requires(client, pi, draft, item):
    client.force_login(pi)
    url = f"{api(draft)}/items/a-01/cells/L5"
    body = {"prompt": "Do it.", "key": [{"text": "a step"}], "requires_tools": ["web_search"]}
    saved = client.post(
        url, {**body, "requires_tools": [" web_search", "drive", "drive"]}, content_type=JSON
    )
    assert saved.status_code == 200 and saved.json()["requires_tools"] == ["web_search", "drive"]
    kept = client.post(url, {"prompt": "Do it again.", "key": []}, content_type=JSON)
    assert kept.json()["requires_tools"] == ["web_search", "drive"]  # omitted: kept
    cleared = client.post(url, {"prompt": "Do it.", "requires_tools": []}, content_type=JSON)
    assert cleared.json()["requires_tools"] == [] and _cell().requires_tools == []


@pytest.mark.parametrize("tools", [["web search"], [""], "web_search"])
def test_a_bad_tool_name_is_refused_naming_the_item_and_level(client, pi, draft, item, tools):
    client.force_login(pi)
    url = f"{api(draft)}/items/a-01/cells/L5"
    answer = client.post(url, {"prompt": "Do it.", "requires_tools": tools}, content_type=JSON)
    assert answer.status_code == 400, answer.content
    assert "requires_tools" in answer.json()
    assert not Cell.objects.exists()


def test_the_service_names_the_item_and_level_of_a_bad_declaration(draft, item, scale):
    with pytest.raises(Exception, match="item a-01 at L5: 'web search' is not a tool name"):
        services.cell_save(item=item, level=scale["L5"], prompt="p", requires_tools=["web search"])
    assert not Cell.objects.exists()


def test_the_cell_page_declares_the_tools(client, pi, draft, item):
    client.force_login(pi)
    url = f"{pages(draft)}/items/a-01/cells/L5/"
    answer = client.post(
        url, {"prompt": "Do it.", "key": "a step", "requires_tools": "web_search,\n drive"}
    )
    assert answer.status_code == 302
    assert _cell().requires_tools == ["web_search", "drive"]
    assert 'value="web_search, drive"' in client.get(url).content.decode()


def test_an_absent_cell_requires_no_tool(draft, item, scale):
    services.cell_save(item=item, level=scale["L5"], prompt="p", requires_tools=["drive"])
    services.cell_save(
        item=item, level=scale["L5"], absent=True, absent_reason="cannot be written at L5"
    )
    assert _cell().requires_tools == []


def test_the_document_carries_a_declaration_only_when_made_and_an_amendment_copies_it(
    draft, item, scale
):
    services.cell_save(item=item, level=scale["L0"], prompt="p")
    services.cell_save(item=item, level=scale["L5"], prompt="p", requires_tools=["drive"])
    cells = design_document(draft)["items"][0]["cells"]
    assert "requires_tools" not in cells[0] and cells[1]["requires_tools"] == ["drive"]
    amended = ProtocolVersionFactory(protocol=draft.protocol, label="2.0")
    design_copy(draft, amended)
    assert Cell.objects.get(version=amended, level__code="L5").requires_tools == ["drive"]
