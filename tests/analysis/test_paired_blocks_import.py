"""Seed 002's import refusals on a ``paired_blocks`` version: a record's sub-study or condition
against the frozen schedule, a task block missing a combination, a tool name with no route —
each named by row and field, nothing written."""

import json

import numpy as np
import pytest

from apps.demo.route_choice import _session
from apps.responses.importing import ImportRejected
from apps.responses.models import Administration, Attempt
from apps.responses.services import responses_import
from tests.factories import SESSION_MAPPING, frozen_route_version

pytestmark = pytest.mark.django_db

MAPPING = SESSION_MAPPING


@pytest.fixture
def frozen():
    return frozen_route_version("ROUTE-I")


def _records(version, item="A-01", model="model-1", rounds=(1,)):
    rng = np.random.default_rng(1)
    adms = (
        Administration.objects.filter(
            version=version, cell__item__code=item, evaluand__rosters__code=model
        )
        .select_related("cell__item")
        .order_by("repetition")
    )
    return [
        _session(a, rng, a.cell.expected_output)
        for a in adms
        if (a.repetition - 1) // 8 + 1 in rounds
    ]


def _import(version, pi, records):
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    return responses_import(
        version=version, user=pi, data=data, filename="s.jsonl", format="jsonl", mapping=MAPPING
    )


def test_a_whole_task_block_imports(frozen):
    version, pi = frozen
    outcome = _import(version, pi, _records(version))
    assert outcome.status == "imported"
    assert Attempt.objects.filter(version=version).count() == 8
    # the session archive is kept verbatim in the attempt's raw record
    attempt = Attempt.objects.filter(version=version).order_by("administration__position").first()
    assert attempt.raw["messages"][2]["tool_calls"][1]["function"].endswith(
        ("report", "report_batch")
    )


def test_a_sub_study_mismatch_is_refused_by_row_and_field_and_nothing_is_written(frozen):
    version, pi = frozen
    records = _records(version)
    records[2]["metadata"]["sub_study"] = "B"
    with pytest.raises(ImportRejected) as error:
        _import(version, pi, records)
    (problem,) = error.value.problems
    assert (problem.row, problem.field) == (3, "metadata.sub_study")
    assert "belongs to sub-study A" in problem.message
    assert Attempt.objects.filter(version=version).count() == 0


def test_a_condition_other_than_the_frozen_assignment_is_refused(frozen):
    version, pi = frozen
    records = _records(version)
    frozen_level = records[0]["metadata"]["condition"]["friction"]
    records[0]["metadata"]["condition"]["friction"] = "low" if frozen_level == "high" else "high"
    with pytest.raises(ImportRejected) as error:
        _import(version, pi, records)
    (problem,) = error.value.problems
    assert (problem.row, problem.field) == (1, "metadata.condition.friction")
    assert Attempt.objects.filter(version=version).count() == 0


def test_a_task_block_missing_a_combination_is_refused(frozen):
    version, pi = frozen
    records = _records(version)[:7]
    with pytest.raises(ImportRejected) as error:
        _import(version, pi, records)
    (problem,) = error.value.problems
    assert (problem.row, problem.field) == (1, "repetition")
    assert "would lack 1 of its 8 combinations" in problem.message
    assert Attempt.objects.filter(version=version).count() == 0


def test_a_tool_name_with_no_route_is_refused(frozen):
    version, pi = frozen
    records = _records(version)
    records[4]["messages"][2]["tool_calls"].append({"function": "teleport_report"})
    with pytest.raises(ImportRejected) as error:
        _import(version, pi, records)
    (problem,) = error.value.problems
    assert (problem.row, problem.field) == (5, "tool_calls")
    assert "'teleport_report' has no route" in problem.message
    assert Attempt.objects.filter(version=version).count() == 0
