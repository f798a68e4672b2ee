"""The plan's decision table is checked in the format the analysis evaluates, plus what only the
plan knows: that a named value is one of its number parameters."""

import copy

import pytest

from apps.analysis.stats.decision import validate_decision_table
from apps.protocols.decision_table import condition_text, decision_table_errors
from apps.studies.opb.pipeline import OPB

KINDS = {
    "epsilon": "number",
    "disclosure_epsilon": "number",
    "seed": "integer",
    "aggregation_level": "choice",
}


def test_the_opb_template_carries_section_8_in_the_evaluators_format():
    assert [rule["id"] for rule in OPB.decision_table] == [f"OPB01-8.{i}" for i in range(1, 9)]
    validate_decision_table(OPB.decision_table)
    assert decision_table_errors(list(OPB.decision_table), KINDS) == []


def test_nested_any_and_all_are_accepted_as_the_evaluator_accepts_them():
    table = [
        {
            "id": "r1",
            "finding": "f",
            "condition": {
                "any": [
                    {"estimate": "beta_A", "op": "<", "value": -1.5},
                    {"all": [{"estimate": "beta_B", "op": "within", "value": "epsilon"}]},
                ]
            },
        }
    ]
    assert decision_table_errors(table, KINDS) == []
    validate_decision_table(table)  # and the evaluator agrees


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (
            {"id": "r", "finding": "f", "condition": {"all": [{"estimate": "b", "op": ">="}]}},
            "decision table rule 1 (r): condition.all[0] is {estimate, op, value} "
            "(or all/any of those)",
        ),
        (
            {
                "id": "r",
                "finding": "f",
                "condition": {"all": [{"estimate": "b", "op": ">=", "value": 0}]},
            },
            "decision table rule 1 (r): condition.all[0].op must be one of > < within, not '>='",
        ),
        (
            {
                "id": "r",
                "finding": "f",
                "condition": {"all": [{"estimate": "b", "op": ">", "value": "aggregation_level"}]},
            },
            "decision table rule 1 (r): condition.all[0].value: "
            "parameter aggregation_level is not a number",
        ),
        (
            {
                "id": "r",
                "finding": "f",
                "condition": {"all": [{"estimate": "b", "op": "within", "value": 0}]},
            },
            "decision table rule 1 (r): condition.all[0].value: a 'within' margin must be > 0",
        ),
        (
            {"id": "r", "finding": " ", "condition": {"all": []}},
            "decision table rule 1 (r): finding must say what the result means",
        ),
        (
            {"finding": "f", "condition": {}},
            "decision table rule 1: id must be a non-empty text such as OPB01-8.1",
        ),
    ],
)
def test_each_malformed_rule_is_named_with_its_place(rule, message):
    assert message in decision_table_errors([rule], KINDS)


def test_a_table_that_is_not_a_list_is_refused():
    assert decision_table_errors({"id": "x"}, KINDS) == [
        "the decision table must be a list of rules"
    ]


def test_conditions_read_as_one_line():
    assert condition_text(OPB.decision_table[0]["condition"]) == (
        "beta_A within epsilon and beta_B > 0"
    )


def test_exclusions_must_name_rules_of_the_same_table():
    table = copy.deepcopy(list(OPB.decision_table))
    assert decision_table_errors(table, KINDS) == []
    table[0]["excludes"] = ["OPB01-8.2", "OPB01-9.9"]
    table[1]["excludes"] = ["OPB01-8.2"]
    table[2]["excludes"] = "OPB01-8.1"
    errors = decision_table_errors(table, KINDS)
    assert "decision table rule 2 (OPB01-8.2): excludes names the rule itself" in errors
    assert "decision table rule 3 (OPB01-8.3): excludes must be a list of rule ids" in errors
    assert (
        "decision table rule 1 (OPB01-8.1): excludes names 'OPB01-9.9', which is not a rule "
        "of this table" in errors
    )
    assert len(errors) == 3


def test_an_asymmetric_within_margin_is_a_pair_around_zero():
    rule = {
        "id": "eq",
        "finding": "equivalent",
        "condition": {"estimate": "beta_A", "op": "within", "value": [-0.05, "epsilon"]},
    }
    assert decision_table_errors([rule], KINDS) == []
    rule["condition"]["value"] = [0.05, "nope"]
    errors = decision_table_errors([rule], KINDS)
    assert any("lower bound must be < 0" in e for e in errors)
    assert any("'nope' is not a parameter of this plan" in e for e in errors)
