"""``PreboundSerializer`` validates exactly as DRF's serializer with the same fields would,
though it builds its fields once per class: checked on the score endpoint's input against a
plain ``Serializer`` twin, over generated bodies (hypothesis)."""

import copy

from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework import serializers

from apps.raters.apis import TaskScoreApi
from tests.factories import score_body_strategies

Prebound = TaskScoreApi.InputSerializer
Plain = type(
    "Plain",
    (serializers.Serializer,),
    {name: copy.deepcopy(field) for name, field in Prebound._declared_fields.items()},
)

_scalars, _values, _objects = score_body_strategies(
    texts=["", " ", " key ", "true", "false", "12", "-1", "2147483648", "any"], max_text=80
)
_bodies = st.one_of(_objects, _values)


@settings(max_examples=400, deadline=None)
@given(body=_bodies)
def test_prebound_validates_as_the_plain_serializer(body):
    prebound, plain = Prebound(data=body), Plain(data=body)
    assert prebound.is_valid() == plain.is_valid()
    if plain.is_valid():
        assert prebound.validated_data == plain.validated_data
    else:
        assert prebound.errors == plain.errors


def test_fields_are_built_once_and_shared():
    assert Prebound(data={}).fields is Prebound(data={"values": {}}).fields
    assert Plain(data={}).fields is not Plain(data={}).fields


def test_one_instance_errors_do_not_leak_into_the_next():
    bad = Prebound(data={"idempotency_key": ""})
    assert not bad.is_valid()
    good = Prebound(data={"values": {"a": 1}, "idempotency_key": "k"})
    assert good.is_valid(), good.errors
    assert good.validated_data == {"values": {"a": 1}, "idempotency_key": "k", "next": False}
