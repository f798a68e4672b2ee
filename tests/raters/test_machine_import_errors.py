"""Errors of the machine-score import (issue 34, Deliver 9): every refused row is named once, with
every problem in it; a problem that is not a row's names the file and the field, never every row.
The response importer shares the frame (``apps.protocols.import_frame``) and answers the same way.
"""

import pytest

from apps.protocols.import_frame import ImportRejected
from apps.raters.models import MachineScore, MachineScoreImport
from apps.raters.services.machine import machine_scores_import
from apps.responses.models import Response
from apps.responses.services import responses_import
from tests.factories import JUDGE, JUDGE_FIELDS, answer_rows, csv_bytes, jsonl, machine_study

pytestmark = pytest.mark.django_db

GRADER = {**JUDGE, "name": "refusal-grader", "model": "grader-model-2026-02"}
FIELDS = [
    *JUDGE_FIELDS,
    {"name": "complied", "kind": "binary", "scored_by": "scorer", "scorer_role": "grader"},
]


@pytest.fixture
def two_roles(protocol, pi):
    """80 responses (10 items × 4 evaluands × 2 repetitions); a judge and a grader, each the
    only scorer of its role."""
    return machine_study(
        protocol=protocol,
        pi=pi,
        fields=FIELDS,
        scorers={"judge": ("judge", JUDGE), "grader": ("grader", GRADER)},
        items=10,
        evaluands=("a", "b", "c", "d"),
        repetitions=2,
    )


def _rows() -> list[dict]:
    return [
        {"position": p, "scorer": "judge", "fidelity": True, "loss1": 0.2, "drift_flag": False}
        for p in range(1, 81)
    ]


def _refusal(version, pi, data: bytes, filename: str) -> ImportRejected:
    with pytest.raises(ImportRejected) as rejected:
        machine_scores_import(version=version, user=pi, data=data, filename=filename)
    assert MachineScore.objects.count() == 0
    assert MachineScoreImport.objects.count() == 0
    return rejected.value


def test_a_jsonl_file_names_each_refused_row_once_with_every_problem_in_it(two_roles, pi):
    rows = _rows()
    rows[6]["fidelty"] = True  # row 7 only: a key the rubric lacks
    rows[11]["complied"] = True  # row 12 only: the grader's field, on a judge's row
    rows[19].update(position=999, loss1=1.4)  # row 20: no such response, and out of range
    refusal = _refusal(two_roles, pi, jsonl(rows), "judge.jsonl")

    found = [(p.row, p.field) for p in refusal.problems]
    assert found == [(7, "fidelty"), (12, "complied"), (20, "position"), (20, "loss1")]
    assert refusal.total == 4
    messages = refusal.messages
    assert len(messages) == 3
    row_20 = [m for m in messages if m.startswith("row 20")]
    assert len(row_20) == 1
    assert "position:" in row_20[0] and "loss1:" in row_20[0] and "above the maximum 1" in row_20[0]
    assert "the grader" not in messages[1] and "'grader'" in messages[1]


def test_a_key_on_every_jsonl_row_is_the_files_problem_and_rows_are_still_checked(two_roles, pi):
    rows = _rows()
    for row in rows:
        row["fidelty"] = True
    rows[2]["loss1"] = -1
    refusal = _refusal(two_roles, pi, jsonl(rows), "judge.jsonl")
    assert [(p.row, p.field) for p in refusal.problems] == [(None, "fidelty"), (3, "loss1")]
    assert refusal.messages[0].startswith("the file judge.jsonl, fidelty: the rubric has no field")


def test_a_csv_column_is_the_files_problem_and_another_roles_value_blames_its_row_only(
    two_roles, pi
):
    rows = _rows()
    for row in rows:
        row.update(fidelty="", complied="")
    rows[4]["complied"] = "yes"  # record 5 is row 6 (the header is row 1)
    rows[9]["fidelity"] = "maybe"  # row 11
    refusal = _refusal(two_roles, pi, csv_bytes(rows), "judge.csv")
    found = [(p.row, p.field) for p in refusal.problems]
    assert found == [(None, "fidelty"), (6, "complied"), (11, "fidelity")]
    assert (
        str(refusal.problems[0]) == "the file judge.csv, fidelty: the rubric has no field 'fidelty'"
    )


def test_a_good_file_with_an_empty_column_of_another_role_imports(two_roles, pi):
    rows = _rows()
    for row in rows:
        row["complied"] = ""
    outcome = machine_scores_import(
        version=two_roles, user=pi, data=csv_bytes(rows), filename="judge.csv"
    )
    assert outcome.status == "imported" and outcome.counts["scores"] == 240


def test_the_response_importer_names_a_refused_row_once_with_every_problem(two_roles, pi):
    rows = answer_rows(two_roles)[:5]
    rows[1].update(item="NOPE", terminal_outcome="exploded")  # row 3
    before = Response.objects.count()
    with pytest.raises(ImportRejected) as rejected:
        responses_import(version=two_roles, user=pi, data=csv_bytes(rows), filename="more.csv")
    found = {(p.row, p.field) for p in rejected.value.problems}
    assert {(3, "item"), (3, "terminal_outcome")} <= found
    row_3 = [m for m in rejected.value.messages if m.startswith("row 3")]
    assert len(row_3) == 1 and "item:" in row_3[0] and "terminal_outcome:" in row_3[0]
    assert Response.objects.count() == before
