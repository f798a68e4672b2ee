"""One import frame (``apps.protocols.import_frame``) under the importers: responses, machine
scores, an LLM judge's loss1 verdicts and design files refuse a file the same way, by the same
words, and write nothing."""

import pytest
from django.core.exceptions import ValidationError

from apps.protocols.import_frame import MAX_LISTED_PROBLEMS, ImportProblem, ImportRejected
from apps.raters.models import MachineScoreImport
from apps.raters.services.machine import machine_scores_import
from apps.responses.models import ResponseImport
from apps.responses.services import responses_import
from apps.studies.fidelity.rubric import fidelity_fields
from tests.factories import JUDGE, JUDGE_FIELDS, jsonl, machine_study
from tests.raters.test_fidelity_judge_import import _cards, consistent
from tests.responses.conftest import build_draft

pytestmark = pytest.mark.django_db


@pytest.fixture
def scored(protocol, pi):
    return machine_study(
        protocol=protocol, pi=pi, fields=JUDGE_FIELDS, scorers={"judge": ("judge", JUDGE)}
    )


@pytest.fixture
def judged(protocol, pi):
    return machine_study(
        protocol=protocol,
        pi=pi,
        fields=fidelity_fields("judge"),
        scorers={"judge": ("judge", JUDGE)},
        items=2,
        parameters={"scores_per_response": "1"},
        before_freeze=_cards,
    )


def _responses(version, user, data, filename):
    return responses_import(version=version, user=user, data=data, filename=filename)


def _machine(version, user, data, filename):
    return machine_scores_import(
        version=version, user=user, data=data, filename=filename, mapping={"scorer": "judge"}
    )


def _written():
    return ResponseImport.objects.count() + MachineScoreImport.objects.count()


@pytest.mark.parametrize("study", ["scored", "judged"])
@pytest.mark.parametrize("data", [b"", b"\n\n"])
def test_every_importer_refuses_a_file_without_records_in_the_same_words(request, pi, study, data):
    version = request.getfixturevalue(study)
    before = _written()
    for run in (_responses, _machine):
        with pytest.raises(ImportRejected) as refused:
            run(version, pi, data, "empty.jsonl")
        assert [p.as_dict() for p in refused.value.problems] == [
            {
                "row": None,
                "field": "",
                "message": "the file holds no records",
                "label": "",
                "file": "empty.jsonl",
            }
        ]
    assert _written() == before


def test_the_response_and_machine_importers_ask_for_the_format_in_the_same_words(scored, pi):
    for run in (_responses, _machine):
        with pytest.raises(ImportRejected) as refused:
            run(scored, pi, b"a,b\n1,2\n", "scores.txt")
        assert refused.value.messages == [
            "the file scores.txt, format: say which format 'scores.txt' is: csv, jsonl or inspect"
        ]
    assert _written() == 1  # the study's own responses


def test_a_judge_file_already_imported_is_a_no_op_that_says_so(judged, pi):
    data = jsonl([{"position": p, "document": consistent()} for p in (1, 2, 3, 4)])
    first = _machine(judged, pi, data, "judge.jsonl")
    again = _machine(judged, pi, data, "judge.jsonl")
    assert (first.status, again.status) == ("imported", "already_imported")
    assert again.record == first.record
    assert MachineScoreImport.objects.count() == 1


def test_a_draft_takes_no_import_of_either_kind(protocol, pi):
    draft = build_draft(protocol=protocol, user=pi)
    with pytest.raises(ValidationError, match="Responses attach only to a frozen version"):
        _responses(draft, pi, b"item,evaluand,response\n", "a.csv")
    with pytest.raises(ValidationError, match="Machine scores attach only to a frozen version"):
        _machine(draft, pi, b"position,loss1\n1,0.4\n", "a.csv")


def test_a_refusal_lists_the_first_hundred_problems_and_counts_the_rest():
    problems = [ImportProblem(row, "field", "bad") for row in range(2, 2 + 250)]
    refused = ImportRejected(problems)
    assert refused.total == 250 and len(refused.problems) == MAX_LISTED_PROBLEMS
    assert refused.messages[0] == "row 2, field: bad"
    assert refused.messages[-1] == "… and 150 more problems"


_FILES = {
    "scored": [{"position": 1, "scorer": "judge", "fidelity": True, "loss1": 0.5}],
    "judged": [{"position": p, "document": consistent()} for p in (1, 2, 3, 4)],
}


@pytest.mark.parametrize("study", ["scored", "judged"])
def test_machine_score_and_judge_imports_name_the_version_with_its_hash(request, pi, study):
    from apps.deviations.models import LogEntry

    version = request.getfixturevalue(study)
    machine_scores_import(version=version, user=pi, data=jsonl(_FILES[study]), filename="s.jsonl")
    entry = LogEntry.objects.filter(protocol=version.protocol, kind="import").last()
    assert entry.refs[0] == {
        "type": "version",
        "id": version.pk,
        "label": f"{version.protocol.code} v{version.label}",
        "sha256": version.sha256,
    }
    assert entry.refs[1]["type"] == "machine_score_import"


def test_a_design_file_reports_problems_in_the_same_shape(protocol, pi):
    from apps.items.services import design_import_plan

    draft = build_draft(protocol=protocol, user=pi)
    plan = design_import_plan(version=draft, content=b"", fmt="csv")
    assert all(isinstance(problem, ImportProblem) for problem in plan.errors)
    assert [p.as_dict() for p in plan.errors] == [
        {"row": None, "field": "file", "message": "the file is empty", "label": ""}
    ]
    assert str(plan.errors[0]) == "the file, file: the file is empty"
    entries = design_import_plan(version=draft, content=b'[{"item": "x"}, 3]', fmt="json")
    assert str(entries.errors[-1]) == "entry 2, entry: is not an object"
