"""The design's parts — the level scale, families, conditions, factors and items — each declared
once, so that their pages (``apps.items.views.parts``) and endpoints (``apps.items.apis``) are
written once for all five.

A ``DesignPart`` names one kind of part's natural key, its access helper (the part, or Http404),
its three services (every write goes through them: they take the draft lock, so the freeze gate
refuses edits to a frozen version), its page form, its API input and output, and the URL names
of its pages. What the generic code assumes of a part:

- services called ``create(version=…, **input)``, ``update(<noun>=part, **input)`` and
  ``delete(<noun>=part)``;
- page URL names ``items:<noun>-edit`` and ``items:<noun>-delete`` (an item's edit form is on
  its own page, ``items:item``), API URL names ``<noun>-create``, ``-update`` and ``-delete``,
  each API URL naming the part by its natural key (``code``, or a factor's ``name``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.core.exceptions import ValidationError
from django.db.models import Model
from rest_framework import serializers

from apps.items import selectors, services
from apps.items.access import (
    get_condition_for,
    get_factor_for,
    get_family_for,
    get_item_for,
    get_level_for,
)
from apps.items.forms import ConditionForm, FactorForm, FamilyForm, ItemForm, LevelForm, PartForm
from apps.items.models import Condition, Factor, FactorRole, Family, FamilyRole, Item, Level
from apps.protocols.models import ProtocolVersion

P = TypeVar("P", bound=Model)
Data = dict[str, Any]


def _no_rows(version: ProtocolVersion) -> Data:
    return {}


def _as_given(version: ProtocolVersion, data: Data, part: Any) -> Data:
    return data


@dataclass(frozen=True)
class DesignPart(Generic[P]):
    """One kind of design part, as its pages and endpoints use it."""

    noun: str  # "family": its services' keyword and its URL names
    title: str  # "Family": messages and page titles ("Family A saved.")
    key: str  # its natural key, fixed once created: "code" (a factor's: "name")
    get: Callable[..., P]  # the access helper: get(version=…, code=…), or Http404
    create: Callable[..., P]
    update: Callable[..., P]
    delete: Callable[..., None]
    form: type[PartForm]
    listing: str  # the URL name of the page listing this kind (an item's: the grid)
    create_input: type[serializers.Serializer[Any]]
    update_input: type[serializers.Serializer[Any]]
    output: type[serializers.Serializer[Any]]  # the part as the API gives it
    template: str = ""  # the listing page's template, with its "add" form
    rows: Callable[[ProtocolVersion], Data] = _no_rows  # the listing page's rows
    page_kwarg: str = ""  # the edit page's URL argument, when not ``key``
    own_page: str = ""  # the URL name of a part's own page (an item's), where it is edited
    refs: Callable[[ProtocolVersion, Data, Any], Data] = _as_given  # API codes → rows
    out: Callable[[P], Data] | None = None  # ``output``'s values, when not the part's own

    def output_of(self, part: P) -> Data:
        """The part as the API gives it (``output``'s shape)."""
        return self.out(part) if self.out is not None else dict(self.output(part).data)

    def key_of(self, part: P) -> str:
        return str(getattr(part, self.key))

    def name_of(self, part: P) -> str:
        """How messages name it: "Family A"."""
        return f"{self.title} {self.key_of(part)}"


# Level scale


class LevelSerializer(serializers.Serializer[Level]):
    ordinal = serializers.IntegerField(min_value=0)
    code = serializers.CharField()
    name = serializers.CharField()
    form = serializers.CharField(allow_blank=True)


class LevelUpdateInputSerializer(serializers.Serializer[Level]):
    name = serializers.CharField(max_length=100)
    form = serializers.CharField(required=False, allow_blank=True, default="")


class LevelCreateInputSerializer(serializers.Serializer[Level]):
    ordinal = serializers.IntegerField(min_value=0, max_value=99)
    code = serializers.CharField(max_length=16)
    name = serializers.CharField(max_length=100)
    form = serializers.CharField(required=False, allow_blank=True, default="")


LEVEL = DesignPart[Level](
    noun="level",
    title="Level",
    key="code",
    get=get_level_for,
    create=services.level_create,
    update=services.level_update,
    delete=services.level_delete,
    form=LevelForm,
    listing="items:levels",
    template="items/levels.html",
    rows=lambda version: {
        "levels": selectors.levels_of(version),
        "default_scale": services.OPB_LEVEL_SCALE,
    },
    page_kwarg="level_code",
    create_input=LevelCreateInputSerializer,
    update_input=LevelUpdateInputSerializer,
    output=LevelSerializer,
)


# Families and their binding stopping rules


class FamilySerializer(serializers.Serializer[Family]):
    code = serializers.CharField()
    name = serializers.CharField()
    role = serializers.ChoiceField(choices=FamilyRole.choices)
    max_level = serializers.CharField(allow_null=True, help_text="Highest level allowed (code).")
    stopping_rule = serializers.CharField(allow_blank=True)
    description = serializers.CharField(allow_blank=True)


class FamilyUpdateInputSerializer(serializers.Serializer[Family]):
    name = serializers.CharField(max_length=200)
    role = serializers.ChoiceField(choices=FamilyRole.choices)
    max_level = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        default=None,
        help_text="The code of the highest level allowed: the binding stopping rule.",
    )
    stopping_rule = serializers.CharField(required=False, allow_blank=True, default="")
    description = serializers.CharField(required=False, allow_blank=True, default="")


class FamilyCreateInputSerializer(FamilyUpdateInputSerializer):
    code = serializers.CharField(max_length=16)


def _family_out(family: Family) -> Data:
    codes = selectors.level_codes_by_ordinal(family.version_id)
    return {
        "code": family.code,
        "name": family.name,
        "role": family.role,
        "max_level": codes.get(family.max_level) if family.max_level is not None else None,
        "stopping_rule": family.stopping_rule,
        "description": family.description,
    }


def _family_rows(version: ProtocolVersion) -> Data:
    codes = selectors.level_codes_by_ordinal(version.pk)
    return {
        "families": [
            (family, codes.get(family.max_level) if family.max_level is not None else None)
            for family in selectors.families_of(version)
        ]
    }


FAMILY = DesignPart[Family](
    noun="family",
    title="Family",
    key="code",
    get=get_family_for,
    create=services.family_create,
    update=services.family_update,
    delete=services.family_delete,
    form=FamilyForm,
    listing="items:families",
    template="items/families.html",
    rows=_family_rows,
    create_input=FamilyCreateInputSerializer,
    update_input=FamilyUpdateInputSerializer,
    output=FamilySerializer,
    out=_family_out,
)


# Conditions (arms, the sham among them)


class ConditionSerializer(serializers.Serializer[Condition]):
    code = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    is_sham = serializers.BooleanField()


class ConditionUpdateInputSerializer(serializers.Serializer[Condition]):
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    is_sham = serializers.BooleanField(required=False, default=False)


class ConditionCreateInputSerializer(ConditionUpdateInputSerializer):
    code = serializers.CharField(max_length=32)


CONDITION = DesignPart[Condition](
    noun="condition",
    title="Condition",
    key="code",
    get=get_condition_for,
    create=services.condition_create,
    update=services.condition_update,
    delete=services.condition_delete,
    form=ConditionForm,
    listing="items:conditions",
    template="items/conditions.html",
    rows=lambda version: {"conditions": selectors.conditions_of(version)},
    create_input=ConditionCreateInputSerializer,
    update_input=ConditionUpdateInputSerializer,
    output=ConditionSerializer,
)


# Factors (randomised or counterbalanced)


# A serializer is a DRF field too, whose ``label`` these fields named "label" shadow.


class FactorSerializer(serializers.Serializer[Factor]):
    name = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]
    levels = serializers.ListField(child=serializers.CharField())
    role = serializers.ChoiceField(choices=FactorRole.choices)


class FactorUpdateInputSerializer(serializers.Serializer[Factor]):
    label = serializers.CharField(max_length=200)  # type: ignore[assignment]
    levels = serializers.ListField(child=serializers.CharField(), min_length=2)
    role = serializers.ChoiceField(choices=FactorRole.choices, default=FactorRole.DESIGN)


class FactorCreateInputSerializer(FactorUpdateInputSerializer):
    name = serializers.SlugField(max_length=64)


FACTOR = DesignPart[Factor](
    noun="factor",
    title="Factor",
    key="name",
    get=get_factor_for,
    create=services.factor_create,
    update=services.factor_update,
    delete=services.factor_delete,
    form=FactorForm,
    listing="items:factors",
    template="items/factors.html",
    rows=lambda version: {"factors": selectors.factors_of(version)},
    create_input=FactorCreateInputSerializer,
    update_input=FactorUpdateInputSerializer,
    output=FactorSerializer,
)


# Items (their cells are written on the item's page, ``apps.items.views.cells``)


class ItemSerializer(serializers.Serializer[Item]):
    code = serializers.CharField()
    family = serializers.CharField()
    domain = serializers.CharField(allow_blank=True)
    condition = serializers.CharField(allow_null=True)
    notes = serializers.CharField(allow_blank=True)
    base_item = serializers.CharField(
        allow_null=True,
        help_text="A disclosure item's (C_SPXI or C₀) Family A base item (OPB-01 §5); null for "
        "every other item.",
    )


class ItemUpdateInputSerializer(serializers.Serializer[Item]):
    family = serializers.CharField(help_text="The family's code.")
    domain = serializers.CharField(required=False, allow_blank=True, default="")
    condition = serializers.CharField(
        required=False, allow_blank=True, allow_null=True, default=None
    )
    notes = serializers.CharField(required=False, allow_blank=True, default="")
    base_item = serializers.CharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text="For a disclosure item (C_SPXI or C₀), required: the code of the Family A item "
        "it inscribes (OPB-01 §5). On update, left as it was when omitted.",
    )


class ItemCreateInputSerializer(ItemUpdateInputSerializer):
    code = serializers.CharField(max_length=64)


def _item_out(item: Item) -> Data:
    return {
        "code": item.code,
        "family": item.family.code,
        "domain": item.domain,
        "condition": item.condition.code if item.condition else None,
        "notes": item.notes,
        "base_item": item.base_item.code if item.base_item_id and item.base_item else None,
    }


def _named(found: Model | None, field: str, code: str) -> None:
    if found is None:
        raise ValidationError({field: f"There is no {field} {code!r} in this version."})


def _item_refs(version: ProtocolVersion, data: Data, item: Item | None) -> Data:
    """The API's input with codes resolved to rows (``item``: the one updated, None when one is
    created). An unknown family, condition or base item is refused naming its field, and so is
    a disclosure item naming no base item, before any write; an update that leaves out the base
    item keeps it."""
    data = dict(data)
    code = item.code if item is not None else data["code"]
    if item is not None:
        data.setdefault("base_item", item.base_item.code if item.base_item else None)
    family = selectors.family_by_code(version, data["family"])
    _named(family, "family", data["family"])
    data["family"] = family
    condition = None
    if data.get("condition"):
        condition = selectors.condition_by_code(version, data["condition"])
        _named(condition, "condition", data["condition"])
    data["condition"] = condition
    if "base_item" in data:
        base_code, data["base_item"] = data["base_item"], None
        if base_code:
            data["base_item"] = selectors.item_by_code(version, base_code)
            if data["base_item"] is None:
                raise ValidationError(
                    {"base_item": f"item {code}'s base item {base_code!r} is not in this version"}
                )
    services.disclosure_base_require(
        code=code, family=data["family"], base_item=data.get("base_item")
    )
    return data


def _item_update(*, item: Item, **data: Any) -> Item:
    # An edit that carries a disclosure item's base item must name one (OPB-01 §5): checked
    # before the one write, so a refusal writes nothing.
    if "base_item" in data:
        services.disclosure_base_require(
            code=item.code, family=data["family"], base_item=data["base_item"]
        )
    return services.item_update(item=item, **data)


ITEM = DesignPart[Item](
    noun="item",
    title="Item",
    key="code",
    get=get_item_for,
    create=services.item_create,
    update=_item_update,
    delete=services.item_delete,
    form=ItemForm,
    listing="items:design",
    own_page="items:item",
    refs=_item_refs,
    create_input=ItemCreateInputSerializer,
    update_input=ItemUpdateInputSerializer,
    output=ItemSerializer,
    out=_item_out,
)

DESIGN_PARTS: tuple[DesignPart[Any], ...] = (LEVEL, FAMILY, CONDITION, FACTOR, ITEM)
