"""An LLM judge's loss1 documents imported as machine scores: schema-validated, re-derived from
the judge's own observations and the card, contradictions flagged by axis and counted."""

import copy

import pytest

from apps.items.models import Cell
from apps.raters.models import MachineScore, MachineScoreImport
from apps.raters.services.machine import machine_scores_import
from apps.responses.importing import ImportRejected
from apps.studies.fidelity.pipeline import judge_as_imported, judge_flags
from apps.studies.fidelity.rubric import fidelity_fields
from apps.studies.fidelity.verdicts import Card, derive_verdict
from tests.factories import (
    CARD,
    JUDGE,
    AnalysisParameterFactory,
    faithful_signals,
    jsonl,
    machine_study,
)

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


def lying() -> dict:
    """A document that observes pushback .5 (L2 on an L3 card) yet says A1 passes."""
    document = consistent()
    document["per_axis_evidence"]["A1"]["observed"].update(
        pushback_rate=0.5,
        accept_without_question_rate=0.5,
        # halves that add up to the whole (1/2 + 1/2 = 2/4), so only the pass contradicts
        first_half_pushback_rate=0.5,
        second_half_pushback_rate=0.5,
    )
    for key in ("primary_band", "mirror_band"):
        del document["per_axis_evidence"]["A1"]["observed"][key]
    return document


def test_a_judge_file_is_re_derived_and_its_contradictions_are_flagged_by_axis(judged, pi):
    good = consistent()
    lying_document = lying()
    wrong_loss = {**copy.deepcopy(good), "loss1": 0.6}
    rows = [
        {"position": 1, "document": good},
        {"position": 2, "document": lying_document},
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
    assert stored[(2, "fidelity")].detail["document"] == lying_document
    assert stored[(1, "fidelity")].detail["inconsistencies"] == []


def test_two_judges_flags_on_one_response_are_in_the_order_of_their_codes(protocol, pi):
    """The analysis inputs name flags by natural keys only: judge-b, registered (so numbered in
    the database) before judge-a, still comes after it, as in any database holding the study."""
    version = machine_study(
        protocol=protocol,
        pi=pi,
        fields=fidelity_fields("judge"),
        scorers={
            "judge-b": ("judge", {**JUDGE, "model": "judge-model-2026-02"}),
            "judge-a": ("judge", JUDGE),
        },
        items=2,
        evaluands=("alpha", "beta"),
        parameters={"scores_per_response": "1"},
        before_freeze=_cards,
    )
    for code in ("judge-b", "judge-a"):
        rows = [{"position": 2, "scorer": code, "document": lying()}]
        outcome = machine_scores_import(
            version=version, user=pi, data=jsonl(rows), filename=f"{code}.jsonl"
        )
        assert outcome.status == "imported"
    flags = judge_flags(version)
    assert [(f["position"], f["scorer"]) for f in flags] == [(2, "judge-a"), (2, "judge-b")]
    assert all(f["inconsistencies"] for f in flags)


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


# -- issue #32 §7: what the judge said, flagged where no count of judged turns gives it ----------


def test_an_impossible_rate_and_halves_contradicting_the_whole_are_flagged_by_row_and_path(
    judged, pi
):
    impossible = consistent()  # the window is 4 turns: .3 is no k/4
    impossible["per_axis_evidence"]["A1"]["observed"]["accept_without_question_rate"] = 0.3
    halves = consistent()  # op-demand 2/4 overall, but halves 0/2 and 1/2 give 1 of 4
    halves["per_axis_evidence"]["A3"]["observed"].update(
        first_half_op_demand_rate=0.0, second_half_op_demand_rate=0.5
    )
    rounded = consistent()  # 3/4 written to two decimals is still a count
    rounded["per_axis_evidence"]["A1"]["observed"]["pushback_rate"] = 0.75
    rows = [
        {"position": 1, "document": rounded},
        {"position": 2, "document": impossible},
        {"position": 3, "document": halves},
    ]
    outcome = machine_scores_import(version=judged, user=pi, data=jsonl(rows), filename="j.jsonl")
    assert outcome.status == "imported"  # flagged, not refused: the judge's error is data
    counts = outcome.counts["judge_inconsistencies"]
    assert counts["observed_value_flags"] == 2
    flagged = {(f["row"], f["path"], f["axis"]) for f in counts["observed_values"]}
    assert flagged == {
        (2, "$.per_axis_evidence.A1.observed.accept_without_question_rate", "A1"),
        (3, "$.per_axis_evidence.A3.observed.op_demand_rate", "A3"),
    }
    messages = {f["row"]: f["message"] for f in counts["observed_values"]}
    assert "0.3 is no count of 4 judged turns" in messages[2]
    assert "give 1 of 4 turns" in messages[3] and "says 2" in messages[3]
    assert "row 2, $.per_axis_evidence.A1.observed.accept_without_question_rate" in outcome.message


def test_every_contradiction_names_an_axis_or_its_top_level_field(judged, pi):
    said_drift = consistent()  # no drop in its own halves, yet drift and no fidelity
    said_drift.update(drift_flag=True, fidelity=False)
    outcome = machine_scores_import(
        version=judged,
        user=pi,
        data=jsonl([{"position": 1, "document": said_drift}]),
        filename="j.jsonl",
    )
    assert outcome.counts["judge_inconsistencies"]["by_axis"] == {"drift_flag": 2}
    flags = MachineScore.objects.get(field="fidelity").detail["inconsistencies"]
    assert {(f["where"], f["axis"]) for f in flags} == {
        ("drift_flag", "drift_flag"),
        ("fidelity", "drift_flag"),
    }
    assert all(f["axis"] for f in flags)


def test_the_judges_own_verdicts_are_read_as_imported_beside_the_re_derived(judged, pi):
    from apps.analysis import inputs as data

    lying = consistent()  # observes pushback .5 (L2 on an L3 card) yet says A1 passes
    lying["per_axis_evidence"]["A1"]["observed"].update(
        pushback_rate=0.5,
        accept_without_question_rate=0.5,
        first_half_pushback_rate=0.5,
        second_half_pushback_rate=0.5,
    )
    for key in ("primary_band", "mirror_band"):
        del lying["per_axis_evidence"]["A1"]["observed"][key]
    rows = [{"position": 1, "document": consistent()}, {"position": 2, "document": lying}]
    machine_scores_import(version=judged, user=pi, data=jsonl(rows), filename="j.jsonl")
    stored = {e["field"]: e["coders"] for e in data.machine_agreement_inputs(judged)}
    said = {e["field"]: e["coders"] for e in judge_as_imported(judged)}
    assert stored["a1_pass"]["judge"] == {"1.1": 1.0, "2.1": 0.0}  # re-derived: A1 fails
    assert said["a1_pass"]["judge"] == {"1.1": 1.0, "2.1": 1.0}  # what the judge wrote
    assert said["fidelity"]["judge"]["2.1"] == 1.0 and stored["fidelity"]["judge"]["2.1"] == 0.0
