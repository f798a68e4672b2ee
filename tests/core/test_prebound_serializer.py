"""``PreboundSerializer`` validates exactly as DRF's serializer with the same fields would,
though it builds its fields once per class: checked on the score endpoint's input against a
plain ``Serializer`` twin, over generated bodies (hypothesis)."""

import copy

from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework import serializers

from apps.raters.apis import TaskScoreApi

Prebound = TaskScoreApi.InputSerializer
Plain = type(
    "Plain",
    (serializers.Serializer,),
    {name: copy.deepcopy(field) for name, field in Prebound._declared_fields.items()},
)

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**33), max_value=2**33),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=80),
    st.sampled_from(["", " ", " key ", "true", "false", "12", "-1", "2147483648", "any"]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)
_bodies = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "values": _values,
            "idempotency_key": _values,
            "seconds_spent": _values,
            "next": _values,
            "queue": _values,
            "other": _values,
        },
    ),
    _values,
)


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
