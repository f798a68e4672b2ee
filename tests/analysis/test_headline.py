"""Issue #37 §6: a report's first heading is its answer, whatever the decision stages say."""

from apps.analysis.headline import report_headline


def _doc(*stages):
    return {"kind": "opb", "estimates": {"surfaces": [{"evaluand": "m1", "stages": list(stages)}]}}


def _stage(**fields):
    return {"stage": "decision", **fields}


def test_one_finding_is_the_heading():
    doc = _doc(_stage(evaluated=True, findings=["the gradient is real"], rules=[]))
    assert report_headline(doc, None)["title"] == "Finding: the gradient is real"


def test_two_matched_exclusive_rules_are_contradictory_not_a_finding():
    stage = _stage(
        evaluated=True,
        findings=["a", "b"],
        contradictions=[{"message": "rules R1 and R2 exclude each other"}],
    )
    headline = report_headline(_doc(stage), None)
    assert headline["title"] == "Contradictory"
    assert headline["entries"][0]["contradictions"] == ["rules R1 and R2 exclude each other"]


def test_a_table_with_unreadable_rules_and_no_finding_is_not_evaluable_with_their_reasons():
    stage = _stage(
        evaluated=True,
        findings=[],
        rules=[
            {"rule_id": "R1", "evaluable": True},
            {"rule_id": "R2", "evaluable": False, "missing": ["beta_B.interval"]},
            {"rule_id": "R3", "evaluable": False, "not_evaluable": ["beta_A: 2 items, needs 10"]},
        ],
    )
    title = report_headline(_doc(stage), None)["title"]
    assert title == "Not evaluable: rule R2 lacks beta_B.interval; beta_A: 2 items, needs 10"


def test_a_fully_read_table_that_matched_nothing_says_so():
    stage = _stage(evaluated=True, findings=[], rules=[{"rule_id": "R1", "evaluable": True}])
    title = report_headline(_doc(stage), None)["title"]
    assert title == "Finding: no rule of the decision table matched"


def test_a_stage_not_evaluated_gives_its_note():
    stage = _stage(evaluated=False, note="reliability below the preregistered minimum")
    title = report_headline(_doc(stage), None)["title"]
    assert title == "Not evaluable: reliability below the preregistered minimum"
