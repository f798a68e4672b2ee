"""A machine score's optional confidence in [0, 1] (issue 34 §6): from a CSV or JSON Lines
``confidence`` column, and from an Inspect log's ``Score.metadata["confidence"]`` (a log
written by inspect_ai itself)."""

import pytest

from apps.raters.models import MachineScore
from apps.raters.services.machine import machine_scores_import
from apps.responses.formats import inspect_available
from apps.responses.importing import ImportRejected
from tests.factories import JUDGE, csv_bytes, jsonl, machine_study

pytestmark = pytest.mark.django_db

FIELDS = [
    {"name": "complied", "kind": "binary", "scored_by": "scorer", "scorer_role": "judge"},
    {"name": "fidelity", "kind": "number", "scored_by": "scorer", "scorer_role": "judge"},
]


@pytest.fixture
def version(protocol, pi):
    return machine_study(
        protocol=protocol,
        pi=pi,
        fields=FIELDS,
        scorers={"judge": ("judge", JUDGE)},
        items=3,
        evaluands=("alpha",),
    )


def _confidences():
    return {
        (s.response.attempt.administration.position, s.field): s.confidence
        for s in MachineScore.objects.select_related("response__attempt__administration")
    }


@pytest.mark.parametrize("format", ["csv", "jsonl"])
def test_a_confidence_column_applies_to_every_value_of_its_row(version, pi, format):
    rows = [
        {"position": 1, "complied": True, "fidelity": 0.5, "confidence": 0.25},
        {"position": 2, "complied": False, "fidelity": 1, "confidence": 1},
        {"position": 3, "complied": True, "fidelity": 0, "confidence": ""},
    ]
    if format == "csv":
        data = csv_bytes([{k: str(v).lower() for k, v in row.items()} for row in rows])
    else:
        rows[2].pop("confidence")
        data = jsonl(rows)
    outcome = machine_scores_import(version=version, user=pi, data=data, filename=f"judge.{format}")
    assert outcome.status == "imported" and outcome.counts["scores"] == 6
    assert _confidences() == {
        (1, "complied"): 0.25,
        (1, "fidelity"): 0.25,
        (2, "complied"): 1.0,
        (2, "fidelity"): 1.0,
        (3, "complied"): None,
        (3, "fidelity"): None,
    }
    assert outcome.record.mapping["confidence"]["complied"] == {"column": "confidence"}


def test_a_confidence_outside_zero_to_one_refuses_the_file_naming_row_and_field(version, pi):
    rows = [
        {"position": 1, "complied": True, "confidence": 1.5},
        {"position": 2, "complied": True, "confidence": "sure"},
        {"position": 3, "complied": True, "confidence": 0.5},
    ]
    with pytest.raises(ImportRejected) as refused:
        machine_scores_import(version=version, user=pi, data=jsonl(rows), filename="j.jsonl")
    named = [(p.row, p.field) for p in refused.value.problems]
    assert named == [(1, "confidence"), (2, "confidence")]
    assert "1.5" in refused.value.problems[0].message
    assert not MachineScore.objects.exists()


@pytest.mark.postgres
def test_the_database_refuses_a_confidence_outside_the_unit_interval(version, pi):
    from django.db import IntegrityError, transaction

    rows = [{"position": 1, "complied": True, "confidence": 0.5}]
    machine_scores_import(version=version, user=pi, data=jsonl(rows), filename="j.jsonl")
    score = MachineScore.objects.get()
    with pytest.raises(IntegrityError), transaction.atomic():
        MachineScore.objects.create(
            version_id=score.version_id,
            response_id=score.response_id,
            scorer_id=score.scorer_id,
            field="fidelity",
            value=0.5,
            confidence=1.01,
        )


def _inspect_log(shared_data, directory) -> bytes:
    """The shared refusal demo log (written by ``inspect_ai.eval``, mockllm, scorer
    ``includes``, two epochs) with a confidence put in some scores' ``metadata``, as a
    model-graded scorer would, and written back by inspect_ai's own ``write_eval_log``."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(shared_data / "inspect" / "refusal_demo_mockllm.eval"))
    for sample in log.samples or []:
        sure = {"xs-1": 0.9, "xs-2": 0.35}.get(str(sample.id))
        if sure is not None:
            sample.scores["includes"].metadata = {"confidence": sure / sample.epoch}
    path = directory / "confident.eval"
    write_eval_log(log, str(path))
    return path.read_bytes()


@pytest.mark.skipif(not inspect_available(), reason="inspect_ai (extra 'inspect') not installed")
def test_an_inspect_scores_metadata_confidence_is_read(shared_data, protocol, pi, tmp_path):
    version = machine_study(
        protocol=protocol,
        pi=pi,
        fields=FIELDS[:1],
        # The log's scorer, as its frozen identity must name it (the import checks provenance).
        scorers={
            "judge": (
                "judge",
                {"kind": "harness_grader", "name": "includes", "version": "inspect_ai 0.3"},
            )
        },
        items=["xs-1", "xs-2", "xs-3"],
        evaluands={"mock": "mockllm/model"},
        repetitions=2,
    )
    outcome = machine_scores_import(
        version=version,
        user=pi,
        data=_inspect_log(shared_data, tmp_path),
        filename="log.eval",
        mapping={"scores": {"includes": "complied"}},
    )
    assert outcome.counts["scores"] == 6
    by_item = {
        (
            s.response.attempt.administration.cell.item.code,
            s.response.attempt.administration.repetition,
        ): s.confidence
        for s in MachineScore.objects.select_related(
            "response__attempt__administration__cell__item"
        )
    }
    assert by_item == {
        ("xs-1", 1): 0.9,
        ("xs-1", 2): 0.45,
        ("xs-2", 1): 0.35,
        ("xs-2", 2): 0.175,
        ("xs-3", 1): None,
        ("xs-3", 2): None,
    }
