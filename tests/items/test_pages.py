"""Design pages and API: who may read and write, and the pages an author walks through."""

import pytest

from apps.items import services
from apps.items.models import Cell, Family, Item
from tests.factories import freeze, write_item
from tests.items.conftest import api, pages

pytestmark = pytest.mark.django_db

READ_PAGES = [
    "/",
    "/levels/",
    "/families/",
    "/conditions/",
    "/factors/",
    "/harm-review/",
    "/items/a-01/",
    "/items/a-01/cells/L0/",
    "/export.csv",
    "/export.json",
]
READ_APIS = ["", "/problems", "/harm-review", "/export/csv"]


@pytest.fixture
def authored(draft, scale, family_a):
    write_item(draft, family_a, "a-01", [scale["L0"]])
    return draft


@pytest.mark.parametrize(
    ("person", "draft_status", "frozen_status"),
    [
        ("pi", 200, 200),
        ("editor", 200, 200),
        ("auditor", 403, 200),
        ("reviewer", 404, 404),
        ("outsider", 404, 404),
    ],
)
def test_reading_the_design(client, request, authored, person, draft_status, frozen_status):
    client.force_login(request.getfixturevalue(person))
    for page in READ_PAGES:
        assert client.get(f"{pages(authored)}{page}").status_code == draft_status, page
    for endpoint in READ_APIS:
        assert client.get(f"{api(authored)}{endpoint}").status_code == draft_status, endpoint
    freeze(authored)
    for page in READ_PAGES:
        assert client.get(f"{pages(authored)}{page}").status_code == frozen_status, page
    for endpoint in READ_APIS:
        assert client.get(f"{api(authored)}{endpoint}").status_code == frozen_status, endpoint


@pytest.mark.parametrize(
    ("person", "status"),
    [("pi", 201), ("editor", 201), ("auditor", 403), ("reviewer", 404), ("outsider", 404)],
)
def test_writing_the_design(client, request, authored, person, status):
    client.force_login(request.getfixturevalue(person))
    response = client.post(
        f"{api(authored)}/families",
        {"code": "Z", "name": "Zed", "role": "other"},
        content_type="application/json",
    )
    assert response.status_code == status
    page = client.post(
        f"{pages(authored)}/families/",
        {"code": "Y", "name": "Why", "role": "other"},
    )
    assert page.status_code == (302 if status == 201 else status)
    expected = {"A", "Y", "Z"} if status == 201 else {"A"}
    assert set(Family.objects.values_list("code", flat=True)) == expected


def test_a_frozen_design_refuses_writes_from_the_pi(client, pi, authored, scale):
    freeze(authored)
    client.force_login(pi)
    response = client.post(
        f"{api(authored)}/items/a-01/cells/L1",
        {"prompt": "late edit"},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "frozen" in str(response.json())
    page = client.get(f"{pages(authored)}/")
    assert "read-only" in page.content.decode()
    assert "New item" not in page.content.decode()


def test_an_author_builds_a_cell_through_the_pages(client, pi, draft):
    client.force_login(pi)
    base = f"{pages(draft)}"
    assert client.post(f"{base}/levels-default/").status_code == 302
    client.post(f"{base}/families/", {"code": "A", "name": "Benign", "role": "harm_constant"})
    client.post(f"{base}/conditions/", {"code": "C0", "name": "Sham", "is_sham": "on"})
    response = client.post(
        f"{base}/new-item/",
        {"code": "a-01", "family": "A", "domain": "alt text", "condition": "C0"},
    )
    assert response.status_code == 302
    response = client.post(
        f"{base}/items/a-01/cells/L4/",
        {"prompt": "Give a procedure.", "key": "!Step one; success: done\nContext note"},
    )
    assert response.status_code == 302
    cell = Cell.objects.get(item__code="a-01", level__code="L4")
    assert list(cell.key_units.values_list("text", "executable")) == [
        ("Step one; success: done", True),
        ("Context note", False),
    ]
    response = client.post(f"{base}/items/a-01/cells/L2/", {"absent": "on", "absent_reason": ""})
    assert response.status_code == 200
    assert "Say why the cell is absent" in response.content.decode()
    item = Item.objects.get(code="a-01")
    assert item.condition.code == "C0" and item.domain == "alt text"
    preview = client.post(f"{base}/key-preview/", {"key": "!exec\nplain"}, HTTP_HX_REQUEST="true")
    assert "executable step" in preview.content.decode()


def test_the_level_scale_can_only_be_used_once(client, pi, draft, scale):
    client.force_login(pi)
    response = client.post(f"{pages(draft)}/levels-default/", follow=True)
    assert "already has a level scale" in response.content.decode()


def test_the_api_builds_and_reads_a_design(client, pi, draft):
    client.force_login(pi)
    base = api(draft)
    assert client.post(f"{base}/levels/default").status_code == 201
    json = "application/json"
    assert (
        client.post(
            f"{base}/families",
            {
                "code": "B",
                "name": "Control",
                "role": "discrimination_control",
                "max_level": "L3",
                "stopping_rule": "L3 maximum.",
            },
            content_type=json,
        ).status_code
        == 201
    )
    assert (
        client.post(f"{base}/items", {"code": "b-01", "family": "B"}, content_type=json).status_code
        == 201
    )
    saved = client.post(
        f"{base}/items/b-01/cells/L3",
        {"prompt": "What should be done?", "key": [{"text": "an action", "executable": True}]},
        content_type=json,
    )
    assert saved.status_code == 200 and saved.json()["key"][0]["executable"] is True
    assert (
        client.post(
            f"{base}/factors",
            {"name": "framing", "label": "Framing", "levels": ["safety", "quality"]},
            content_type=json,
        ).status_code
        == 201
    )
    document = client.get(base).json()
    assert document["families"][0]["max_level"] == "L3"
    assert document["items"][0]["cells"][0]["level"] == "L3"
    unknown = client.post(f"{base}/items", {"code": "x", "family": "Q"}, content_type=json)
    assert unknown.status_code == 400 and "family" in unknown.json()
    assert client.post(f"{base}/items/b-01/delete").status_code == 204
    assert not Item.objects.exists()


def test_the_openapi_schema_lists_the_design_endpoints(client, pi):
    client.force_login(pi)
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    paths = schema["paths"]
    prefix = "/api/v1/protocols/{protocol_code}/versions/{label}/design"
    for path in (
        prefix,
        f"{prefix}/items/{{item_code}}/cells/{{level_code}}",
        f"{prefix}/import",
        "/api/v1/harm-reviews/{token}/verdict",
    ):
        assert path in paths, path


def test_the_grid_page_stays_usable_at_375_pixels(client, pi, authored):
    client.force_login(pi)
    html = client.get(f"{pages(authored)}/").content.decode()
    assert 'class="table-scroll"' in html  # the grid scrolls sideways inside its own box
    assert 'role="region"' in html and 'tabindex="0"' in html


def test_deleting_a_family_with_items_is_refused_on_the_page(client, pi, authored):
    client.force_login(pi)
    response = client.post(f"{pages(authored)}/families/A/delete/", follow=True)
    assert "has items" in response.content.decode()
    assert Family.objects.filter(code="A").exists()
    services.item_delete(item=Item.objects.get(code="a-01"))
    client.post(f"{pages(authored)}/families/A/delete/")
    assert not Family.objects.filter(code="A").exists()


def test_the_grid_page_query_count_does_not_grow_with_items(client, pi, draft, scale, family_a):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(pi)

    def count():
        with CaptureQueriesContext(connection) as queries:
            assert client.get(f"{pages(draft)}/").status_code == 200
        return len(queries)

    write_item(draft, family_a, "a-01", list(scale.values()))
    few = count()
    for n in range(2, 12):
        write_item(draft, family_a, f"a-{n:02d}", list(scale.values()))
    assert count() == few


def test_an_unknown_export_format_is_a_404(client, pi, authored):
    client.force_login(pi)
    assert client.get(f"{pages(authored)}/export.xml").status_code == 404
    assert client.get(f"{api(authored)}/export/xml").status_code == 404


def test_the_admin_shows_the_design_but_offers_no_change(admin_client, authored):
    item = Item.objects.get(code="a-01")
    assert admin_client.get(f"/admin/items/item/{item.pk}/change/").status_code == 200
    assert admin_client.get("/admin/items/item/add/").status_code == 403
    response = admin_client.post(f"/admin/items/item/{item.pk}/delete/", {"post": "yes"})
    assert response.status_code == 403
    assert Item.objects.filter(pk=item.pk).exists()


def test_the_version_page_links_to_its_design(client, pi, authored):
    client.force_login(pi)
    html = client.get(f"/protocols/{authored.protocol.code}/v/{authored.label}/").content.decode()
    assert f'href="{pages(authored)}/"' in html
