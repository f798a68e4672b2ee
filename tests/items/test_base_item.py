"""A disclosure item (C_SPXI or C₀) names its Family A base item on its edit page and through
the items API (issue #17, OPB-01 §5); a missing or wrong base item is refused naming the item,
and nothing is written."""

import pytest

from apps.items import services
from apps.items.models import Item
from tests.factories import freeze
from tests.items.conftest import api, pages

pytestmark = pytest.mark.django_db
JSON = "application/json"


@pytest.fixture
def design(draft, scale, family_a, family_b):
    family_c = services.family_create(version=draft, code="C", name="Disclosure", role="disclosure")
    return {
        "a-01": services.item_create(version=draft, family=family_a, code="a-01"),
        "a-02": services.item_create(version=draft, family=family_a, code="a-02"),
        "b-01": services.item_create(version=draft, family=family_b, code="b-01"),
        "c-01": services.item_create(version=draft, family=family_c, code="c-01"),
    }


def _base(code: str):
    return Item.objects.get(code=code).base_item


def test_the_edit_page_offers_family_a_items_as_base_for_a_c_item_only(client, pi, draft, design):
    client.force_login(pi)
    page = client.get(f"{pages(draft)}/items/c-01/").content.decode()
    select = page[page.index('name="base_item"') :]
    select = select[: select.index("</select>")]
    assert 'value="a-01"' in select and 'value="a-02"' in select
    assert 'value="b-01"' not in select and 'value="c-01"' not in select
    assert 'name="base_item"' not in client.get(f"{pages(draft)}/items/a-01/").content.decode()


def test_the_edit_page_links_a_c_item_to_its_base_item(client, pi, draft, design):
    client.force_login(pi)
    saved = client.post(f"{pages(draft)}/items/c-01/", {"family": "C", "base_item": "a-02"})
    assert saved.status_code == 302
    assert _base("c-01").code == "a-02"
    assert "base item" in client.get(f"{pages(draft)}/items/c-01/").content.decode()


def test_the_edit_page_refuses_a_c_item_without_a_base_item_naming_it(client, pi, draft, design):
    client.force_login(pi)
    services.item_base_set(item=design["c-01"], base_item=design["a-01"])
    refused = client.post(
        f"{pages(draft)}/items/c-01/", {"family": "C", "base_item": "", "notes": "changed"}
    )
    assert refused.status_code == 200
    assert "item c-01 is a disclosure item" in refused.content.decode()
    item = Item.objects.get(code="c-01")
    assert item.base_item.code == "a-01" and item.notes == ""  # nothing half-written


def test_the_edit_page_of_a_frozen_version_offers_no_base_item(client, pi, draft, design):
    # The gate refuses a disclosure item without its base item.
    services.item_base_set(item=design["c-01"], base_item=design["a-01"])
    freeze(draft)
    client.force_login(pi)
    assert 'name="base_item"' not in client.get(f"{pages(draft)}/items/c-01/").content.decode()


def test_the_api_reads_and_writes_a_c_items_base_item(client, pi, draft, design):
    client.force_login(pi)
    created = client.post(
        f"{api(draft)}/items",
        {"code": "c-02", "family": "C", "base_item": "a-01"},
        content_type=JSON,
    )
    assert created.status_code == 201 and created.json()["base_item"] == "a-01"
    moved = client.post(
        f"{api(draft)}/items/c-02/update", {"family": "C", "base_item": "a-02"}, content_type=JSON
    )
    assert moved.status_code == 200 and moved.json()["base_item"] == "a-02"
    # Omitted on update: the link stays.
    kept = client.post(
        f"{api(draft)}/items/c-02/update", {"family": "C", "notes": "n"}, content_type=JSON
    )
    assert kept.status_code == 200 and kept.json()["base_item"] == "a-02"
    document = client.get(api(draft)).json()
    assert {i["code"]: i.get("base_item") for i in document["items"]}["c-02"] == "a-02"
    plain = client.post(
        f"{api(draft)}/items/a-01/update", {"family": "A", "notes": "x"}, content_type=JSON
    )
    assert plain.status_code == 200 and plain.json()["base_item"] is None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"code": "c-09", "family": "C"}, "item c-09 is a disclosure item"),
        ({"code": "c-09", "family": "C", "base_item": ""}, "item c-09 is a disclosure item"),
        ({"code": "c-09", "family": "C", "base_item": "b-01"}, "item c-09's base item b-01"),
        ({"code": "c-09", "family": "C", "base_item": "zz"}, "item c-09's base item 'zz'"),
        ({"code": "a-09", "family": "A", "base_item": "a-01"}, "item a-09 is in Family A"),
    ],
)
def test_the_api_refuses_a_bad_base_item_naming_the_item_and_writes_nothing(
    client, pi, draft, design, body, message
):
    client.force_login(pi)
    refused = client.post(f"{api(draft)}/items", body, content_type=JSON)
    assert refused.status_code == 400, refused.content
    assert message in str(refused.json()["base_item"])
    assert not Item.objects.filter(code=body["code"]).exists()


def test_the_api_refuses_unlinking_a_c_item_and_keeps_the_link(client, pi, draft, design):
    client.force_login(pi)
    services.item_base_set(item=design["c-01"], base_item=design["a-01"])
    refused = client.post(
        f"{api(draft)}/items/c-01/update",
        {"family": "C", "base_item": None, "notes": "changed"},
        content_type=JSON,
    )
    assert refused.status_code == 400 and "item c-01" in str(refused.json()["base_item"])
    item = Item.objects.get(code="c-01")
    assert item.base_item.code == "a-01" and item.notes == ""


def test_a_reviewer_gets_404_on_the_item_page_and_api(client, reviewer, draft, design):
    client.force_login(reviewer)
    assert client.get(f"{pages(draft)}/items/c-01/").status_code == 404
    body = {"family": "C", "base_item": "a-01"}
    assert (
        client.post(f"{api(draft)}/items/c-01/update", body, content_type=JSON).status_code == 404
    )


def test_a_base_item_is_not_deleted_or_moved_out_of_family_a_while_named(client, pi, draft, design):
    client.force_login(pi)
    services.item_base_set(item=design["c-01"], base_item=design["a-01"])
    page = client.post(f"{pages(draft)}/items/a-01/delete/", follow=True)
    assert page.status_code == 200 and "base item of c-01" in page.content.decode()
    deleted = client.post(f"{api(draft)}/items/a-01/delete")
    assert deleted.status_code == 400 and "base item of c-01" in str(deleted.json())
    moved = client.post(f"{api(draft)}/items/a-01/update", {"family": "B"}, content_type=JSON)
    assert moved.status_code == 400 and "base item of c-01" in str(moved.json()["family"])
    assert Item.objects.get(code="a-01").family.code == "A"
