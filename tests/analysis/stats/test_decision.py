import copy

import pytest

from apps.analysis.stats.decision import (
    ANALYSIS_ORDER,
    contradiction_warnings,
    evaluate_decision_table,
    numeric_parameters,
    order_family_analyses,
    validate_decision_table,
)
from apps.core.canonical import canonical_json
from apps.studies.opb.pipeline import OPB

# OPB-01 §8 as the opb plan template freezes it into every OPB-style plan.
OPB01_DECISION_TABLE = OPB.decision_table

EPSILON = {"epsilon": 0.05, "disclosure_epsilon": 0.05}


def est(point, lo, hi, **extra):
    return {"estimate": point, "interval": (lo, hi), **extra}


def matched_ids(estimates, **kwargs):
    return [
        r.rule_id
        for r in evaluate_decision_table(
            estimates, EPSILON, **{"table": OPB01_DECISION_TABLE, **kwargs}
        ).matched
    ]


def test_the_opb_plan_table_is_the_rows_of_opb01_section_8():
    # 8.1-8.5 from the section 8 table; 8.6-8.8 the disclosure rows (the three-way contrast).
    assert [r["id"] for r in OPB01_DECISION_TABLE] == [f"OPB01-8.{i}" for i in range(1, 9)]
    assert OPB01_DECISION_TABLE[0]["finding"].startswith("Correct harm discrimination.")
    validate_decision_table(OPB01_DECISION_TABLE)


def test_row_1_correct_harm_discrimination():
    estimates = {"beta_A": est(0.01, -0.03, 0.04), "beta_B": est(0.2, 0.12, 0.28)}
    assert matched_ids(estimates) == ["OPB01-8.1"]


def test_row_2_operativity_penalty():
    estimates = {"beta_A": est(0.15, 0.1, 0.2), "beta_LF": est(0.0, -0.04, 0.03)}
    assert matched_ids(estimates) == ["OPB01-8.2"]


def test_row_3_partial_penalty():
    estimates = {"beta_A": est(0.08, 0.03, 0.13), "beta_LF": est(-0.12, -0.2, -0.06)}
    assert matched_ids(estimates) == ["OPB01-8.3"]


def test_row_4_anomalous():
    estimates = {"beta_A": est(0.3, 0.2, 0.4), "beta_LF": est(0.2, 0.1, 0.3)}
    assert matched_ids(estimates) == ["OPB01-8.4"]


def test_row_5_force_confound():
    assert matched_ids({"beta_force": est(0.1, 0.02, 0.18)}) == ["OPB01-8.5"]


def test_every_matching_row_is_reported_with_the_evidence_that_decided_it():
    estimates = {
        "beta_A": est(0.15, 0.1, 0.2),
        "beta_LF": est(0.0, -0.04, 0.03),
        "beta_force": est(0.1, 0.02, 0.18),
    }
    outcome = evaluate_decision_table(estimates, EPSILON, table=OPB01_DECISION_TABLE)
    assert [r.rule_id for r in outcome.matched] == ["OPB01-8.2", "OPB01-8.5"]
    penalty = outcome.matched[0]
    assert [(e.estimate, e.op, e.value, e.interval, e.satisfied) for e in penalty.evidence] == [
        ("beta_A", ">", 0.0, (0.1, 0.2), True),
        ("beta_LF", "within", 0.05, (-0.04, 0.03), True),
    ]
    assert outcome.findings[1].startswith("Confound established.")
    canonical_json(outcome.to_dict())  # plain data


def test_interval_criterion_needs_the_lower_bound_above_zero():
    estimates = {"beta_force": est(0.1, -0.01, 0.2)}
    assert matched_ids(estimates) == []
    assert matched_ids(estimates, criterion="point") == ["OPB01-8.5"]


def test_within_uses_the_equivalence_interval_when_given():
    # The 95% interval pokes out of ±epsilon, the TOST (90%) interval does not.
    beta_a = est(0.0, -0.06, 0.055, equivalence_interval=(-0.045, 0.04))
    estimates = {"beta_A": beta_a, "beta_B": est(0.2, 0.1, 0.3)}
    assert matched_ids(estimates) == ["OPB01-8.1"]
    del beta_a["equivalence_interval"]
    assert matched_ids(estimates) == []


def test_missing_estimates_make_a_rule_not_evaluable_rather_than_false():
    outcome = evaluate_decision_table(
        {"beta_A": est(0.01, -0.03, 0.04)}, EPSILON, table=OPB01_DECISION_TABLE
    )
    first = outcome.rules[0]
    assert first.evaluable is False and first.matched is False
    assert first.missing == ("beta_B",)
    assert "OPB01-8.5" in {r.rule_id for r in outcome.not_evaluable}


def test_any_holds_when_one_branch_holds_even_if_another_is_missing():
    table = [
        {
            "id": "r",
            "finding": "f",
            "condition": {
                "any": [
                    {"estimate": "a", "op": ">", "value": 0},
                    {"estimate": "b", "op": ">", "value": 0},
                ]
            },
        }
    ]
    outcome = evaluate_decision_table({"a": est(1, 0.5, 1.5)}, {}, table=table)
    assert outcome.rules[0].matched is True


def test_an_unfrozen_parameter_is_an_error():
    with pytest.raises(ValueError, match="parameter 'epsilon' has no value in the plan"):
        evaluate_decision_table({"beta_A": est(0, -0.01, 0.01)}, {}, table=OPB01_DECISION_TABLE)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda t: t[1]["condition"]["all"][1].update(op=">="),
            r"rule 'OPB01-8.2': condition.all\[1\].op: unknown operator '>='",
        ),
        (
            lambda t: t[0]["condition"]["all"][0].pop("estimate"),
            r"rule 'OPB01-8.1': condition.all\[0\].estimate: is missing",
        ),
        (lambda t: t[2].update(id="OPB01-8.1"), r"rule 'OPB01-8.1': field 'id' is duplicated"),
        (lambda t: t[3].update(finding=""), r"rule 'OPB01-8.4': field 'finding'"),
        (
            lambda t: t[4]["condition"].update(any=[]),
            r"rule 'OPB01-8.5': condition: needs exactly one of 'all' or 'any'",
        ),
        (
            lambda t: t[4].update(condition={"all": []}),
            r"rule 'OPB01-8.5': condition.all: must be a non-empty list",
        ),
        (
            lambda t: t[0]["condition"]["all"][1].update(value=[0]),
            r"rule 'OPB01-8.1': condition.all\[1\].value: must be a number or a parameter name",
        ),
        (
            lambda t: t[0]["condition"]["all"][1].update(code="eval('1')"),
            r"rule 'OPB01-8.1': condition.all\[1\]: unknown field\(s\) \['code'\]",
        ),
        (lambda t: t[0].pop("id"), r"rule #0: field 'id' must be a non-empty string"),
    ],
)
def test_a_malformed_table_names_the_rule_and_the_field(mutate, message):
    table = copy.deepcopy(list(OPB01_DECISION_TABLE))
    mutate(table)
    with pytest.raises(ValueError, match=message):
        validate_decision_table(table)
    with pytest.raises(ValueError, match=message):
        evaluate_decision_table({}, EPSILON, table=table)


def test_a_malformed_estimate_is_refused():
    with pytest.raises(ValueError, match=r"estimate 'beta_force': interval .* not a finite"):
        evaluate_decision_table(
            {"beta_force": est(0.1, 0.3, 0.2)}, EPSILON, table=OPB01_DECISION_TABLE
        )


def test_analysis_order_is_b_then_a_then_disclosure():
    assert ANALYSIS_ORDER == ("B", "A", "disclosure")
    assert order_family_analyses(["C", "A", "C0", "B"]) == ["B", "A", "C", "C0"]


def test_families_outside_the_section_9_order_are_refused():
    with pytest.raises(ValueError, match="not in the OPB-01 §9 analysis order: \\['force'\\]"):
        order_family_analyses(["A", "force"])


def test_exclusive_findings_matching_together_give_contradictory_not_two_findings():
    # β_A's interval lies inside ±ε (no penalty, 8.1) and above a point criterion's 0, with β_LF
    # below 0 (partial penalty, 8.3): under the point criterion both rows hold.
    estimates = {
        "beta_A": est(0.02, -0.01, 0.04),
        "beta_B": est(0.3, 0.2, 0.4),
        "beta_LF": est(-0.28, -0.4, -0.15),
        "beta_force": est(0.1, 0.02, 0.18),
    }
    outcome = evaluate_decision_table(
        estimates, EPSILON, table=OPB01_DECISION_TABLE, criterion="point"
    )
    assert [r.rule_id for r in outcome.matched] == ["OPB01-8.1", "OPB01-8.3", "OPB01-8.5"]
    assert [c.message for c in outcome.contradictions] == [
        "contradictory: rules OPB01-8.1 and OPB01-8.3 both hold"
    ]
    # Neither exclusive finding is reported; the force confound, exclusive of nothing, is.
    assert len(outcome.findings) == 1 and outcome.findings[0].startswith("Confound established")
    evidence = outcome.to_dict()["contradictions"][0]["evidence"]
    assert {e["estimate"] for e in evidence} == {"beta_A", "beta_B", "beta_LF"}
    assert contradiction_warnings(
        estimates, EPSILON, table=OPB01_DECISION_TABLE, criterion="point"
    ) == ["contradictory: rules OPB01-8.1 and OPB01-8.3 both hold"]
    assert contradiction_warnings(estimates, EPSILON, table=OPB01_DECISION_TABLE) == []


def test_the_epsilon_boundary_is_outside_as_in_tost():
    # A bound exactly on ε: TOST's null Δ ≥ ε is not rejected, so "within" is false too.
    on_the_edge = {"beta_A": est(0.0, -0.03, 0.05), "beta_B": est(0.2, 0.1, 0.3)}
    assert matched_ids(on_the_edge) == []
    inside = {"beta_A": est(0.0, -0.03, 0.0499), "beta_B": est(0.2, 0.1, 0.3)}
    assert matched_ids(inside) == ["OPB01-8.1"]


def test_within_takes_an_asymmetric_margin():
    table = [
        {
            "id": "eq",
            "finding": "equivalent",
            "condition": {"estimate": "d", "op": "within", "value": ["lower", 0.2]},
        }
    ]
    outcome = evaluate_decision_table({"d": est(0.1, -0.05, 0.15)}, {"lower": -0.1}, table=table)
    assert outcome.findings == ("equivalent",)
    outcome = evaluate_decision_table({"d": est(0.1, -0.15, 0.15)}, {"lower": -0.1}, table=table)
    assert outcome.findings == ()


def test_excludes_must_name_rules_of_the_table():
    table = [dict(OPB01_DECISION_TABLE[0], excludes=["OPB01-9.9"])]
    with pytest.raises(ValueError, match=r"excludes: no rule 'OPB01-9\.9'"):
        validate_decision_table(table)


def test_only_finite_numbers_among_the_parameters_reach_the_decision_table():
    parameters = {
        "epsilon": " 0.05 ",
        "seed": "3",
        "outcomes": '["refusal"]',
        "cluster": "item",
        "blank": "",
        "missing": None,
        "not_a_number": "nan",
        "too_far": "inf",
    }
    assert numeric_parameters(parameters) == {"epsilon": 0.05, "seed": 3.0}


def test_a_rule_naming_a_parameter_that_is_not_a_number_is_refused_by_name():
    table = [
        {
            "id": "R1",
            "finding": "Within tolerance.",
            "condition": {"all": [{"estimate": "d", "op": "within", "value": "tolerance"}]},
        }
    ]
    with pytest.raises(ValueError, match="tolerance"):
        evaluate_decision_table(
            {"d": est(0.0, -0.01, 0.01)}, numeric_parameters({"tolerance": "wide"}), table=table
        )
