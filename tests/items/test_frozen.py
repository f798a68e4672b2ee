"""Frozen is frozen: a frozen version's design cannot change by any path."""

import pytest
from django.core.exceptions import ValidationError
from django.db import DatabaseError, connection, transaction

from apps.items import services
from apps.items.models import Cell, HarmReview, Item, KeyUnit, Level
from tests.factories import freeze, write_item
from tests.items.conftest import api

pytestmark = pytest.mark.django_db


@pytest.fixture
def frozen(draft, scale, family_a):
    write_item(draft, family_a, "a-01", [scale["L0"], scale["L5"]])
    return freeze(draft)


def _refused(sql, params):
    with (
        pytest.raises(DatabaseError, match=r"preregistry:.*frozen"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(sql, params)


def test_every_service_refuses_a_frozen_version(frozen, scale):
    item = Item.objects.get(code="a-01")
    cell = Cell.objects.get(item=item, level=scale["L0"])
    calls = [
        lambda: services.cell_save(item=item, level=scale["L1"], prompt="late"),
        lambda: services.cell_delete(cell=cell),
        lambda: services.item_create(version=frozen, family=item.family, code="a-02"),
        lambda: services.item_delete(item=item),
        lambda: services.level_update(level=scale["L0"], name="renamed"),
        lambda: services.family_delete(family=item.family),
        lambda: services.harm_review_open(version=frozen),
    ]
    for call in calls:
        with pytest.raises(ValidationError, match="frozen"):
            call()
    assert Cell.objects.get(pk=cell.pk).prompt == "a-01 at L0"


@pytest.mark.postgres
@pytest.mark.parametrize("table", ["items_item", "items_cell", "items_keyunit", "items_level"])
def test_raw_sql_update_and_delete_are_refused(frozen, table):
    _refused(f"UPDATE {table} SET version_id = version_id WHERE version_id = %s", [frozen.pk])
    _refused(f"DELETE FROM {table} WHERE version_id = %s", [frozen.pk])


@pytest.mark.postgres
def test_raw_sql_insert_is_refused(frozen, scale):
    item = Item.objects.get(code="a-01")
    _refused(
        "INSERT INTO items_cell (version_id, item_id, level_id, prompt, absent, absent_reason) "
        "VALUES (%s, %s, %s, 'smuggled', false, '')",
        [frozen.pk, item.pk, scale["L3"].pk],
    )
    cell = Cell.objects.get(item=item, level=scale["L0"])
    _refused(
        "INSERT INTO items_keyunit (version_id, cell_id, position, text, executable) "
        "VALUES (%s, %s, 99, 'extra', false)",
        [frozen.pk, cell.pk],
    )


@pytest.mark.postgres
def test_queryset_update_and_delete_are_refused(frozen):
    for queryset, change in (
        (Cell.objects.filter(version=frozen), {"prompt": "rewritten"}),
        (KeyUnit.objects.filter(version=frozen), {"executable": True}),
        (Item.objects.filter(version=frozen), {"domain": "other"}),
        (Level.objects.filter(version=frozen), {"name": "other"}),
    ):
        with pytest.raises(DatabaseError, match="frozen"), transaction.atomic():
            queryset.update(**change)
    # In SQL: the ORM's delete stops first at the frozen schedule's protected references to
    # the cells, before the database is asked.
    _refused("DELETE FROM items_cell WHERE version_id = %s", [frozen.pk])
    assert Cell.objects.filter(version=frozen, prompt="a-01 at L0").exists()


@pytest.mark.postgres
def test_the_api_answers_a_guard_refusal_with_409(client, pi, frozen, monkeypatch):
    # Let the service's own check pass, so the database trigger is what refuses.
    from apps.items.services import design

    def draft_locked(version):
        from apps.protocols.models import ProtocolVersion

        return ProtocolVersion.objects.select_related("protocol").get(pk=version.pk)

    monkeypatch.setattr(design, "draft_locked", draft_locked)
    client.force_login(pi)
    response = client.post(
        f"{api(frozen)}/items/a-01/cells/L0",
        {"prompt": "rewritten"},
        content_type="application/json",
    )
    assert response.status_code == 409
    assert "frozen" in response.json()["detail"]


@pytest.mark.postgres
def test_harm_reviews_of_a_frozen_version_cannot_be_rewritten(draft, scale, family_a, reviewer):
    write_item(draft, family_a, "a-01", [scale["L0"], scale["L5"]])
    # The builder runs the item's review to its verdicts (the gate wants it resolved).
    frozen = freeze(draft)
    assert HarmReview.objects.filter(version=frozen, verdict="not_more_harmful").count() == 2
    with pytest.raises(DatabaseError, match="frozen"), transaction.atomic():
        HarmReview.objects.filter(version=frozen).update(verdict="more_harmful")
    _refused("DELETE FROM items_harmreview WHERE version_id = %s", [frozen.pk])
