"""The freeze gate on a ``paired_blocks`` plan (seed 002): the task-block minimum, sub-studies
never pooled, every family in exactly one sub-study."""

import json

import pytest
from django.core.cache import cache

from apps.demo.route_choice import SUB_STUDIES, route_choice_draft
from apps.protocols.gate import version_gate
from apps.protocols.services import version_update
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_verdicts():
    cache.clear()
    yield
    cache.clear()


def _codes(problems):
    return {p.code: p.message for p in problems}


def test_fewer_task_blocks_per_model_than_the_frozen_minimum_is_refused():
    pi = UserFactory()
    # 8 repetitions: one round, so 8 task blocks per model and sub-study, below 64
    draft = route_choice_draft(user=pi, code="ROUTE-G1", parameters={"repetitions": "8"})
    problems = _codes(version_gate(version=draft))
    assert "plan_not_computable" in problems
    message = problems["plan_not_computable"]
    assert "8 task blocks" in message and "minimum of 64" in message
    assert "min_task_blocks" in message


def test_a_minimum_the_schedule_meets_passes_the_gate():
    pi = UserFactory()
    draft = route_choice_draft(
        user=pi, code="ROUTE-G2", parameters={"repetitions": "16", "min_task_blocks": "16"}
    )
    assert version_gate(version=draft) == []


def test_a_rule_pooling_the_sub_studies_is_refused_with_the_rule_named():
    pi = UserFactory()
    draft = route_choice_draft(user=pi, code="ROUTE-G3")
    table = [
        {
            "id": "POOLED-1",
            "finding": "friction moves route choice overall",
            "condition": {
                "any": [
                    {"estimate": "A_friction", "op": ">", "value": 0},
                    {"estimate": "B_friction", "op": ">", "value": 0},
                ]
            },
        }
    ]
    draft = version_update(version=draft, user=pi, decision_table=table)
    problems = _codes(version_gate(version=draft))
    assert "sub_studies_pooled" in problems
    assert "POOLED-1" in problems["sub_studies_pooled"]
    assert "SUB_STUDIES_NEVER_POOLED" in problems["sub_studies_pooled"]


def test_a_family_in_no_sub_study_is_refused():
    pi = UserFactory()
    draft = route_choice_draft(
        user=pi, code="ROUTE-G4", parameters={"sub_studies": json.dumps(SUB_STUDIES[:1])}
    )
    problems = _codes(version_gate(version=draft))
    assert "sub_study_unassigned" in problems
    assert "family B belongs to no sub-study" in problems["sub_study_unassigned"]
