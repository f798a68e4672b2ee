"""Every design part — level, family, condition, factor, item — through the one generic page and
endpoint mechanism (``apps.items.parts``): created, updated and deleted by the API with the
documented bodies, the same through the pages, refused on a frozen version, and 404 for an
unknown part."""

import pytest

from apps.items.models import Condition, Factor, Family, Item, Level
from tests.factories import freeze
from tests.items.conftest import api, pages

pytestmark = pytest.mark.django_db

JSON = "application/json"

# (collection, key, create body, its answer, update body, its answer, model, key field)
PARTS = [
    (
        "levels",
        "L7",
        {"ordinal": 7, "code": "L7", "name": "extra"},
        {"ordinal": 7, "code": "L7", "name": "extra", "form": ""},
        {"name": "renamed", "form": "a form"},
        {"ordinal": 7, "code": "L7", "name": "renamed", "form": "a form"},
        Level,
        "code",
    ),
    (
        "families",
        "Z",
        {"code": "Z", "name": "Zed", "role": "other"},
        {
            "code": "Z",
            "name": "Zed",
            "role": "other",
            "max_level": None,
            "stopping_rule": "",
            "description": "",
        },
        {"name": "Zed", "role": "other", "max_level": "L3", "stopping_rule": "L3 at most."},
        {
            "code": "Z",
            "name": "Zed",
            "role": "other",
            "max_level": "L3",
            "stopping_rule": "L3 at most.",
            "description": "",
        },
        Family,
        "code",
    ),
    (
        "conditions",
        "C9",
        {"code": "C9", "name": "Arm"},
        {"code": "C9", "name": "Arm", "description": "", "is_sham": False},
        {"name": "Sham arm", "is_sham": True},
        {"code": "C9", "name": "Sham arm", "description": "", "is_sham": True},
        Condition,
        "code",
    ),
    (
        "factors",
        "framing",
        {"name": "framing", "label": "Framing", "levels": ["safety", "quality"]},
        {"name": "framing", "label": "Framing", "levels": ["safety", "quality"], "role": "design"},
        {"label": "Framing", "levels": ["a", "b", "c"], "role": "counterbalanced"},
        {
            "name": "framing",
            "label": "Framing",
            "levels": ["a", "b", "c"],
            "role": "counterbalanced",
        },
        Factor,
        "name",
    ),
    (
        "items",
        "z-01",
        {"code": "z-01", "family": "A"},
        {
            "code": "z-01",
            "family": "A",
            "domain": "",
            "condition": None,
            "notes": "",
            "base_item": None,
        },
        {"family": "A", "domain": "alt text"},
        {
            "code": "z-01",
            "family": "A",
            "domain": "alt text",
            "condition": None,
            "notes": "",
            "base_item": None,
        },
        Item,
        "code",
    ),
]


@pytest.mark.parametrize(
    ("collection", "key", "create", "created", "update", "updated", "model", "field"), PARTS
)
def test_each_part_is_created_updated_and_deleted_by_the_api(
    client,
    pi,
    draft,
    scale,
    family_a,
    collection,
    key,
    create,
    created,
    update,
    updated,
    model,
    field,
):
    client.force_login(pi)
    base = f"{api(draft)}/{collection}"
    response = client.post(base, create, content_type=JSON)
    assert response.status_code == 201, response.content
    assert response.json() == created
    response = client.post(f"{base}/{key}/update", update, content_type=JSON)
    assert response.status_code == 200, response.content
    assert response.json() == updated
    assert client.post(f"{base}/{key}/delete").status_code == 204
    assert not model.objects.filter(version=draft, **{field: key}).exists()
    assert client.post(f"{base}/{key}/delete").status_code == 404
    assert client.post(f"{base}/{key}/update", update, content_type=JSON).status_code == 404


@pytest.mark.parametrize(
    ("collection", "key", "create", "created", "update", "updated", "model", "field"), PARTS
)
def test_a_frozen_version_refuses_every_part_write(
    client,
    pi,
    draft,
    scale,
    family_a,
    collection,
    key,
    create,
    created,
    update,
    updated,
    model,
    field,
):
    client.force_login(pi)
    base = f"{api(draft)}/{collection}"
    assert client.post(base, create, content_type=JSON).status_code == 201
    freeze(draft)
    for url, body in (
        (base, {**create, field: "other"}),
        (f"{base}/{key}/update", update),
        (f"{base}/{key}/delete", {}),
    ):
        response = client.post(url, body, content_type=JSON)
        assert response.status_code == 400, url
        assert "frozen" in str(response.json()), url
    assert model.objects.filter(version=draft, **{field: key}).exists()


# The pages: (list page, the add form's fields, edit page's fields), for the four parts listed
# on a page of their own; an item is added on "new-item/" and edited on its page.
PAGE_PARTS = [
    ("levels", "L7", {"ordinal": 7, "code": "L7", "name": "extra"}, {"name": "renamed"}, Level),
    (
        "families",
        "Z",
        {"code": "Z", "name": "Zed", "role": "other"},
        {"name": "Renamed", "role": "other"},
        Family,
    ),
    ("conditions", "C9", {"code": "C9", "name": "Arm"}, {"name": "Renamed"}, Condition),
    (
        "factors",
        "framing",
        {"name": "framing", "label": "Framing", "levels": "a\nb", "role": "design"},
        {"label": "Renamed", "levels": "a\nb", "role": "design"},
        Factor,
    ),
]


@pytest.mark.parametrize(("collection", "key", "add", "edit", "model"), PAGE_PARTS)
def test_each_listed_part_is_added_edited_and_deleted_on_its_pages(
    client, pi, draft, scale, collection, key, add, edit, model
):
    client.force_login(pi)
    listing = f"{pages(draft)}/{collection}/"
    response = client.post(listing, add, follow=True)
    assert response.redirect_chain[-1][0] == listing
    assert f"{key} added." in response.content.decode()
    edit_page = client.get(f"{listing}{key}/")
    assert edit_page.status_code == 200
    assert f'action="{listing}{key}/delete/"' in edit_page.content.decode()
    response = client.post(f"{listing}{key}/", edit, follow=True)
    assert response.redirect_chain[-1][0] == listing
    assert f"{key} saved." in response.content.decode()
    stored = model.objects.get(
        version=draft, **{"name" if collection == "factors" else "code": key}
    )
    assert (stored.label if collection == "factors" else stored.name) in ("Renamed", "renamed")
    response = client.post(f"{listing}{key}/delete/", follow=True)
    assert f"{key} removed." in response.content.decode()
    assert client.get(f"{listing}{key}/").status_code == 404
    # A second click on "delete" finds nothing to delete and goes back to the list.
    assert client.post(f"{listing}{key}/delete/").status_code == 302


@pytest.mark.parametrize(("collection", "key", "add", "edit", "model"), PAGE_PARTS)
def test_an_auditor_may_not_open_a_parts_edit_page(
    client, pi, auditor, draft, scale, collection, key, add, edit, model
):
    client.force_login(pi)
    client.post(f"{pages(draft)}/{collection}/", add)
    freeze(draft)
    client.force_login(auditor)
    assert client.get(f"{pages(draft)}/{collection}/").status_code == 200
    assert client.get(f"{pages(draft)}/{collection}/{key}/").status_code == 403
    assert client.post(f"{pages(draft)}/{collection}/{key}/delete/").status_code == 403
    assert model.objects.filter(version=draft).exists()


def test_an_item_is_added_edited_and_deleted_on_its_pages(client, pi, draft, scale, family_a):
    client.force_login(pi)
    response = client.post(f"{pages(draft)}/new-item/", {"code": "z-01", "family": "A"})
    assert response.status_code == 302
    assert response["Location"] == f"{pages(draft)}/items/z-01/"
    response = client.post(f"{pages(draft)}/items/z-01/", {"family": "A", "domain": "alt text"})
    assert response["Location"] == f"{pages(draft)}/items/z-01/"
    assert Item.objects.get(code="z-01").domain == "alt text"
    response = client.post(f"{pages(draft)}/items/z-01/delete/")
    assert response["Location"] == f"{pages(draft)}/"
    assert not Item.objects.filter(code="z-01").exists()
