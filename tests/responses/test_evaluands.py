"""Evaluands: seed 001's frozen identity tuple; a change makes a new evaluand, the old one stays."""

import pytest
from django.core.exceptions import ValidationError

from apps.core.canonical import canonical_json, sha256_hex
from apps.responses.models import IDENTITY_FIELDS, Evaluand
from apps.responses.services import evaluand_register, evaluand_revise

pytestmark = pytest.mark.django_db

IDENTITY = {
    "model": "llama-2-70b-chat",
    "provider": "local vLLM",
    "safeguards": {"moderation": "off"},
    "inference_settings": {"temperature": 0},
    "harness_version": "h-1.2.0",
    "system_prompt": "You are a helpful assistant.",
    "observation_projection": "final message only",
    "toolkit": [],
    "memory_policy": "fresh context",
    "budgets": {"max_tokens": 1024},
    "retry_policy": "none",
}


def test_the_identity_hash_is_the_sha256_of_the_canonical_tuple(pi):
    evaluand, created = evaluand_register(user=pi, label="Llama", **IDENTITY)
    assert created
    assert evaluand.identity_sha256 == sha256_hex(canonical_json(IDENTITY))
    assert list(evaluand.identity()) == list(IDENTITY_FIELDS)


def test_registering_the_same_tuple_again_returns_the_first_evaluand(pi):
    first, _ = evaluand_register(user=pi, label="Llama", **IDENTITY)
    again, created = evaluand_register(user=pi, label="Another name", **IDENTITY)
    assert not created
    assert again == first
    assert again.label == "Llama"  # the label is not part of the identity
    assert Evaluand.objects.count() == 1


def test_editing_the_system_prompt_forks_the_identity_and_keeps_the_old_evaluand(pi):
    old, _ = evaluand_register(user=pi, label="Llama", **IDENTITY)
    new = evaluand_revise(evaluand=old, user=pi, system_prompt="You are a careful assistant.")
    assert new.pk != old.pk
    assert new.identity_sha256 != old.identity_sha256
    assert new.derived_from == old
    assert new.label == "Llama"
    old.refresh_from_db()
    assert old.system_prompt == "You are a helpful assistant."
    assert old.identity_sha256 == sha256_hex(canonical_json(IDENTITY))


@pytest.mark.parametrize(
    ("element", "value"),
    [
        ("system_prompt", "You are a helpful assistant. "),  # one space is a change
        ("budgets", {"max_tokens": 2048}),
        ("toolkit", ["search"]),
        ("retry_policy", "one retry on transport error"),
    ],
)
def test_any_element_changed_is_a_new_evaluand(pi, element, value):
    old, _ = evaluand_register(user=pi, label="Llama", **IDENTITY)
    assert evaluand_revise(evaluand=old, user=pi, **{element: value}).pk != old.pk


def test_a_revision_that_changes_nothing_is_refused(pi):
    old, _ = evaluand_register(user=pi, label="Llama", **IDENTITY)
    with pytest.raises(ValidationError, match="Nothing in the identity changed"):
        evaluand_revise(evaluand=old, user=pi, label="renamed only")


def test_a_revision_onto_an_existing_identity_names_it(pi):
    old, _ = evaluand_register(user=pi, label="Llama", **IDENTITY)
    evaluand_register(user=pi, label="Other", **{**IDENTITY, "model": "other"})
    with pytest.raises(ValidationError, match="already the evaluand Other"):
        evaluand_revise(evaluand=old, user=pi, model="other")


def test_elements_of_the_wrong_kind_are_refused_by_name(pi):
    with pytest.raises(ValidationError) as error:
        evaluand_register(user=pi, label="x", model="m", budgets=["not", "an", "object"])
    assert "budgets" in error.value.message_dict


@pytest.mark.django_db
def test_an_auditor_reads_evaluands_but_cannot_register_or_revise_one(client):
    from apps.accounts.models import Role
    from apps.responses.models import Evaluand
    from tests.factories import MembershipFactory, RosterEntryFactory, UserFactory

    auditor = UserFactory()
    membership = MembershipFactory(user=auditor, role=Role.AUDITOR)
    pi = UserFactory()
    evaluand, _ = evaluand_register(user=pi, label="m", model="m-1")
    # Enrolled in the audited protocol, so the auditor may read it.
    RosterEntryFactory(version__protocol=membership.protocol, evaluand=evaluand)
    client.force_login(auditor)
    assert client.get(f"/api/v1/evaluands/{evaluand.pk}").status_code == 200
    before = Evaluand.objects.count()
    create = client.post("/api/v1/evaluands/create", {"label": "x", "model": "x-1"})
    assert create.status_code == 403
    revise = client.post(f"/api/v1/evaluands/{evaluand.pk}/revise", {"model": "m-2"})
    assert revise.status_code == 403
    assert client.post("/evaluands/new/", {"label": "x", "model": "x-1"}).status_code == 403
    assert client.post(f"/evaluands/{evaluand.pk}/revise/", {"model": "m-2"}).status_code == 403
    assert Evaluand.objects.count() == before
