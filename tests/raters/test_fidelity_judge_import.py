"""An LLM judge's loss1 documents imported as machine scores: schema-validated, re-derived from
the judge's own observations and the card, contradictions flagged by axis and counted."""

import copy

import pytest

from apps.items.models import Cell
from apps.raters.models import MachineScore, MachineScoreImport
from apps.raters.rubric_templates import fidelity_fields
from apps.raters.services.machine import machine_scores_import
from apps.responses.importing import ImportRejected
from apps.studies.fidelity.verdicts import Card, derive_verdict
from tests.factories import AnalysisParameterFactory
from tests.raters.fidelity_study import CARD, faithful_signals
from tests.raters.machine_study import JUDGE, jsonl, machine_study

pytestmark = pytest.mark.django_db


def _cards(draft):
    Cell.objects.filter(version=draft).update(expected_kind="json", expected_output=CARD)
    AnalysisParameterFactory(version=draft, name="drift_epsilon", kind="number", value="0.05")


@pytest.fixture
def judged(protocol, pi):
    return machine_study(
        protocol=protocol,
        pi=pi,
        fields=fidelity_fields("judge"),
        scorers={"judge": ("judge", JUDGE)},
        items=2,
        evaluands=("alpha", "beta"),
        parameters={"scores_per_response": "1"},
        before_freeze=_cards,
    )


def consistent() -> dict:
    return derive_verdict(
        signals=faithful_signals(), card=Card.from_dict(CARD), epsilon="0.05"
    ).document


def test_a_judge_file_is_re_derived_and_its_contradictions_are_flagged_by_axis(judged, pi):
    good = consistent()
    lying = copy.deepcopy(good)  # observes pushback .5 (L2 on an L3 card) yet says A1 passes
    lying["per_axis_evidence"]["A1"]["observed"].update(
        pushback_rate=0.5, accept_without_question_rate=0.5
    )
    for key in ("primary_band", "mirror_band"):
        del lying["per_axis_evidence"]["A1"]["observed"][key]
    wrong_loss = {**copy.deepcopy(good), "loss1": 0.6}
    rows = [
        {"position": 1, "document": good},
        {"position": 2, "document": lying},
        {"position": 3, **wrong_loss},  # the document's keys at the top of the row
        {"position": 4, "document": good},
    ]
    outcome = machine_scores_import(
        version=judged, user=pi, data=jsonl(rows), filename="judge.jsonl"
    )
    assert outcome.status == "imported"
    counts = outcome.counts["judge_inconsistencies"]
    assert counts["documents"] == 2
    assert counts["by_axis"] == {"A1": 3, "loss1": 1}  # A1.pass, fidelity and loss1 name A1
    stored = {
        (s.response.attempt.administration.position, s.field): s
        for s in MachineScore.objects.select_related("response__attempt__administration")
    }
    # The stored verdict is the re-derived one, never the judge's contradiction.
    assert stored[(2, "a1_pass")].value is False and stored[(2, "fidelity")].value is False
    assert stored[(2, "loss1")].value == 0.8
    assert stored[(3, "loss1")].value == 1
    flags = stored[(2, "fidelity")].detail["inconsistencies"]
    assert {(f["where"], f["axis"]) for f in flags} == {
        ("A1.pass", "A1"),
        ("fidelity", "A1"),
        ("loss1", "A1"),
    }
    assert stored[(2, "fidelity")].detail["document"] == lying
    assert stored[(1, "fidelity")].detail["inconsistencies"] == []


def test_a_document_failing_the_schema_refuses_the_import_naming_row_and_json_path(judged, pi):
    bad = consistent()
    bad["per_axis_evidence"]["A3"]["observed"]["op_demand_rate"] = 7.5
    empty_quote = consistent()
    empty_quote["per_axis_evidence"]["A5"]["quote"] = ""
    rows = [
        {"position": 1, "document": consistent()},
        {"position": 2, "document": bad},
        {"position": 3, "document": empty_quote},
    ]
    with pytest.raises(ImportRejected) as rejected:
        machine_scores_import(version=judged, user=pi, data=jsonl(rows), filename="j.jsonl")
    found = {(p.row, p.field) for p in rejected.value.problems}
    assert (2, "$.per_axis_evidence.A3.observed.op_demand_rate") in found
    assert (3, "$.per_axis_evidence.A5.quote") in found
    assert MachineScore.objects.count() == 0 and MachineScoreImport.objects.count() == 0


def test_a_count_above_the_pressure_window_refuses_the_import(judged, pi):
    bad = consistent()
    bad["per_axis_evidence"]["A4"]["observed"]["premise_defended_count"] = 5  # window is 4
    with pytest.raises(ImportRejected) as rejected:
        machine_scores_import(
            version=judged,
            user=pi,
            data=jsonl([{"position": 1, "document": bad}]),
            filename="j.jsonl",
        )
    (problem,) = rejected.value.problems
    assert problem.row == 1
    assert problem.field == "$.per_axis_evidence.A4.observed.premise_defended_count"


def test_the_same_judge_verdict_twice_is_refused(judged, pi):
    rows = [{"position": 1, "document": consistent()}] * 2
    with pytest.raises(ImportRejected) as rejected:
        machine_scores_import(version=judged, user=pi, data=jsonl(rows), filename="j.jsonl")
    assert [p.row for p in rejected.value.problems] == [2]


def test_a_fidelity_plan_whose_cells_carry_no_card_is_refused_at_the_freeze(protocol, pi):
    from apps.protocols.services import FreezeRefused

    def no_cards(draft):
        AnalysisParameterFactory(version=draft, name="drift_epsilon", kind="number", value="0.05")

    with pytest.raises(FreezeRefused) as refused:
        machine_study(
            protocol=protocol,
            pi=pi,
            fields=fidelity_fields("judge"),
            scorers={"judge": ("judge", JUDGE)},
            items=2,
            evaluands=("alpha",),
            before_freeze=no_cards,
        )
    assert "PolicyCard" in str(refused.value)
