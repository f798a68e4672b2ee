"""The freeze gate on a CRUCIBLE plan (issue #14, "Bad input"): an acceptance policy naming an
unknown axis or listing rungs out of order is a gate problem naming it, found by running the
crucible pipeline on synthetic data of the draft; and the roster's eligibility check (§2)."""

import json

import pytest
from django.core.cache import cache
from django.core.exceptions import ValidationError

from apps.demo.crucible import POLICIES, crucible_draft
from apps.protocols.gate import version_gate
from apps.protocols.services import version_freeze
from apps.responses.services import evaluand_register, roster_enroll
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_verdicts():
    cache.clear()
    yield
    cache.clear()


def _problems(policies):
    pi = UserFactory()
    draft, _ = crucible_draft(
        user=pi, code="CRU-G", parameters={"acceptance_policies": json.dumps(policies)}
    )
    return draft, pi, [f"{p.code}: {p.message}" for p in version_gate(version=draft)]


def test_the_demo_plan_passes_the_gate_and_freezes():
    draft, pi, problems = _problems(POLICIES)
    assert problems == []
    assert version_freeze(version=draft, user=pi).state == "frozen"


def test_a_policy_naming_an_unknown_axis_is_a_gate_problem_naming_it():
    policies = [{"code": "strict", "floors": [{"axis": "charisma", "minimum": 0.5}]}]
    _, _, problems = _problems(policies)
    (problem,) = problems
    assert problem.startswith("plan_not_computable:")
    assert "acceptance policy strict, floor 1 names the axis 'charisma'" in problem


def test_a_policy_listing_rungs_out_of_order_is_a_gate_problem_naming_it():
    policies = [{"code": "ladder", "rungs": ["R0", "R2", "R1"]}]
    _, _, problems = _problems(policies)
    (problem,) = problems
    assert "acceptance policy ladder lists its rungs out of order (R0, R2, R1)" in problem


def test_the_roster_refuses_a_marketed_model_name_naming_the_missing_elements():
    pi = UserFactory()
    draft, refused = crucible_draft(user=pi, code="CRU-R")
    assert "not an eligible identity" in refused
    for element in ("provider", "harness_version", "system_prompt", "retry_policy"):
        assert element in refused
    assert "model," not in refused  # the model is there; only the missing ones are named
    partial, _ = evaluand_register(
        user=pi, label="almost", model="m", provider="p", harness_version="h"
    )
    with pytest.raises(ValidationError) as refusal:
        roster_enroll(version=draft, evaluand=partial, code="almost", user=pi)
    assert "safeguards" in str(refusal.value) and "provider" not in str(refusal.value)


def test_without_the_requirement_the_roster_takes_a_bare_model_name():
    pi = UserFactory()
    _draft, refused = crucible_draft(
        user=pi, code="CRU-N", parameters={"require_full_identity": "false"}
    )
    assert refused == ""
