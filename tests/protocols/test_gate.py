"""The freeze gate: every problem, each with a code, a message naming what is missing, and a
link to the field where it is fixed; other apps add theirs through the component registry."""

import pytest

from apps.protocols.components import Problem, VersionComponent, register_component
from apps.protocols.gate import version_gate
from apps.protocols.models import AnalysisParameter
from apps.protocols.services import version_amend, version_update
from tests.factories import OPB_SECTIONS, OPB_VALUES

pytestmark = pytest.mark.django_db


def _codes(problems):
    return [p.code for p in problems]


def test_a_new_opb_draft_lists_every_missing_parameter_and_section(draft):
    problems = version_gate(version=draft)
    missing = {p.message for p in problems if p.code == "param_missing"}
    assert "the equivalence margin ε has no value" in missing
    assert "the agreement threshold has no value" in missing
    # defaults (k = 2, reservation 30 minutes) are values already
    assert not any("scores per response" in m for m in missing)
    empty = {p.message for p in problems if p.code == "section_empty"}
    assert "the hypotheses section holds only the template's outline" in empty
    assert "the stopping rules section holds only the template's outline" in empty
    assert not any("background" in m for m in empty)  # background is not required


def test_each_problem_links_to_its_field_on_the_draft_page(draft):
    by_message = {p.message: p.url for p in version_gate(version=draft)}
    assert (
        by_message["the equivalence margin ε has no value"]
        == "/protocols/OPB-T/v/1.0/edit/#param-epsilon"
    )
    assert by_message["the hypotheses section holds only the template's outline"].endswith(
        "#section-hypotheses"
    )


def test_a_filled_draft_passes(ready_draft):
    assert version_gate(version=ready_draft) == []


def test_emptying_a_required_section_is_named(ready_draft, creator):
    version_update(version=ready_draft, user=creator, sections={"design": "   "})
    problems = version_gate(version=ready_draft)
    assert [(p.code, p.message) for p in problems] == [
        ("section_empty", "the design section is empty")
    ]


def test_a_stored_value_that_no_longer_fits_its_kind_is_param_invalid(ready_draft):
    # The services refuse such a value; the gate checks again at the freeze regardless.
    AnalysisParameter.objects.filter(version=ready_draft, name="n_per_cell").update(value="3")
    problems = version_gate(version=ready_draft)
    assert [(p.code, p.message) for p in problems] == [
        ("param_invalid", "the n per cell must be at least 5, not 3")
    ]


def test_a_decision_table_naming_an_unknown_parameter_is_refused(ready_draft):
    table = list(ready_draft.decision_table)
    table[0] = {
        **table[0],
        "condition": {"any": [{"estimate": "beta_A", "op": "within", "value": "x"}]},
    }
    type(ready_draft).objects.filter(pk=ready_draft.pk).update(decision_table=table)
    ready_draft.refresh_from_db()
    problems = version_gate(version=ready_draft)
    assert _codes(problems) == ["decision_table_invalid"]
    assert "'x' is not a parameter of this plan" in problems[0].message
    assert problems[0].message == (
        "decision table rule 1 (OPB01-8.1): condition.any[0].value 'x' is not a parameter "
        "of this plan; its number parameters are adjudication_delta, agreement_minimum, "
        "bootstrap_replicates, disclosure_epsilon, epsilon, interval_coverage, min_clusters, "
        "n_per_cell, n_per_surface_min, "
        "repetitions, reservation_minutes, scores_per_response, seed, sham_word_tolerance"
    )


def test_an_amendment_needs_a_rationale(frozen, creator):
    amendment = version_amend(version=frozen, user=creator)
    problems = version_gate(version=amendment)
    assert _codes(problems) == ["rationale_missing"]
    assert "v1.0" in problems[0].message
    assert problems[0].url.endswith("/v/1.1/edit/#amendment-rationale")
    version_update(version=amendment, user=creator, amendment_rationale="ε was too wide.")
    assert version_gate(version=amendment) == []


def test_registered_components_add_their_checks(ready_draft):
    register_component(
        VersionComponent(
            name="items",
            checks=lambda version: [Problem("key_missing", "item A-3 has no scoring key", "/x")],
        )
    )
    assert [p.as_dict() for p in version_gate(version=ready_draft)] == [
        {"code": "key_missing", "message": "item A-3 has no scoring key", "url": "/x"}
    ]


def test_a_component_may_not_take_a_name_the_document_uses():
    with pytest.raises(ValueError, match="reserved"):
        register_component(VersionComponent(name="parameters"))


def test_a_frozen_version_has_one_problem_not_draft(frozen):
    assert _codes(version_gate(version=frozen)) == ["not_draft"]


def test_the_gate_sees_every_required_parameter(draft, creator):
    values = {k: v for k, v in OPB_VALUES.items() if k not in ("seed", "n_per_cell")}
    version_update(version=draft, user=creator, sections=OPB_SECTIONS, parameters=values)
    messages = [p.message for p in version_gate(version=draft)]
    assert messages == ["the n per cell has no value", "the random seed has no value"]


def test_a_declared_parameter_held_with_another_kind_is_refused_naming_both_kinds(ready_draft):
    """Issue #12: the opb pipeline declares exclusion_reasons as json; held as text (the format
    before parameters were typed) it is refused. A plan's own undeclared parameter is fine."""
    for name in ("exclusion_reasons", "site_notes"):
        AnalysisParameter.objects.create(
            version=ready_draft,
            name=name,
            label=name.replace("_", " "),
            kind="text",
            value="fixture_hash_mismatch: the input fixture's hash differs",
            required=False,
            position=100 + len(name),
        )
    problems = version_gate(version=ready_draft)
    assert [(p.code, p.message) for p in problems] == [
        (
            "param_kind_mismatch",
            "the parameter exclusion_reasons is held as text, but the opb pipeline declares "
            "it as json: give it as json",
        )
    ]
    assert problems[0].url.endswith("#param-exclusion_reasons")
    AnalysisParameter.objects.filter(version=ready_draft, name="exclusion_reasons").delete()
    assert version_gate(version=ready_draft) == []
