"""The ``paired_blocks`` pipeline (seed 002) on synthetic studies with planted effects."""

import json

import pytest

from apps.analysis.pipelines import get_pipeline
from apps.analysis.pipelines.base import PlanInputError
from apps.studies.paired_blocks.pipeline import (
    BEHAVIOURAL_LABEL,
    POOLING_RULE,
    pooling_violations,
)
from tests.factories import parameters, route_raw

PIPELINE = get_pipeline("paired_blocks")


def _run(raw, **overrides):
    params = {**raw["parameters"], **overrides}
    inputs = PIPELINE.assemble({**raw, "parameters": params})
    return inputs, PIPELINE.compute(inputs, parameters=params, seed=2002)


def _contrast(result, model, sub, endpoint, name):
    (row,) = [
        r
        for r in result["contrasts"]
        if (r["evaluand"], r["sub_study"], r["endpoint"], r["contrast"])
        == (model, sub, endpoint, name)
    ]
    return row


def test_a_planted_friction_contrast_excludes_zero_and_the_other_contrasts_cover_it():
    raw = route_raw(planted={"friction": 0.3}, seed=11)
    _, result = _run(raw)
    for model in ("model-1", "model-2"):
        for sub in ("A", "B"):
            planted = _contrast(result, model, sub, "full_completion", "friction")
            assert planted["n_blocks"] == 64
            # 8 tasks repeated over 8 rounds: clustered by task, the exact sign-flip interval
            # over the 8 task means (issue #36 §4); no t interval below 10 tasks. Tasks and
            # rounds crossed, 8 of each: the two-way interval beside it, and this 0/1
            # endpoint's decision reads the score interval on the effective pairs, its design
            # effect clustered by task and round.
            assert "sign-flip" in planted["note"] and "two-way" in planted["note"]
            assert planted["bootstrap_interval"][0] > 0
            assert planted["t_interval"] is None
            assert planted["two_way_interval"][0] > 0
            assert planted["interval"] == planted["score_interval"]
            assert "clustered by task and round" in planted["interval_method"]
            assert planted["interval"][0] > 0
            for name in ("alternate", "framing", "alternate×friction"):
                row = _contrast(result, model, sub, "full_completion", name)
                low, high = row["interval"]
                assert low < 0 < high, (model, sub, name)


def test_every_model_sub_study_endpoint_and_contrast_is_reported_never_pooled():
    _, result = _run(route_raw(seed=3))
    keys = {(r["evaluand"], r["sub_study"], r["endpoint"]) for r in result["contrasts"]}
    for model in ("model-1", "model-2"):
        for endpoint in ("full_completion", "authorised_route", "tokens"):
            assert {(model, "A", endpoint), (model, "B", endpoint)} <= keys
        # the oracle's route choice is judged in sub-study A only
        assert (model, "A", "oracle_route_choice") in keys
        assert (model, "B", "oracle_route_choice") not in keys
    assert {r["sub_study"] for r in result["contrasts"]} == {"A", "B"}
    assert result["pooling"]["pooled"] is False
    labels = {r["sub_study"]: r["label"] for r in result["contrasts"]}
    assert labels == {"A": "", "B": BEHAVIOURAL_LABEL}
    assert len(result["conditions"]) == 2 * 2 * 8


def test_route_choice_comes_from_the_tool_calls_through_the_frozen_mapping():
    _, result = _run(route_raw(seed=4))
    # the synthetic sessions take the alternate route exactly when friction is high and the
    # alternate is present, which is the oracle's choice: always matching it
    row = _contrast(result, "model-1", "A", "oracle_route_choice", "friction")
    assert row["estimate"] == pytest.approx(0.0)
    alt = [c for c in result["conditions"] if c["evaluand"] == "model-1" and c["sub_study"] == "A"]
    for condition in alt:
        expected = (
            "alternate"
            if condition["condition"]["friction"] == "high"
            and condition["condition"]["alternate"] == "present"
            else "primary"
        )
        assert set(condition["routes"]) == {expected}
        assert condition["endpoints"]["oracle_route_choice"]["mean"] == 1.0


def test_a_tool_name_with_no_route_is_refused_naming_the_administration_and_field():
    raw = route_raw(seed=5)
    raw["task_blocks"]["administrations"][3]["record"]["messages"][1]["tool_calls"].append(
        {"function": "mystery_tool"}
    )
    with pytest.raises(PlanInputError, match="mystery_tool") as error:
        PIPELINE.assemble(raw)
    assert "administration 4" in error.value.where
    assert "tool_calls" in error.value.where


def test_an_infrastructure_failure_is_in_its_stratum_and_in_no_denominator():
    clean = route_raw(seed=6)
    failing = route_raw(seed=6, failures={1: "transport", 2: "budget", 700: "provider"})
    _, before = _run(clean)
    _, after = _run(failing)
    counts = {(c["stratum"], c["evaluand"]): c["count"] for c in after["infrastructure"]["counts"]}
    assert counts == {
        ("transport", "model-1"): 1,
        ("budget", "model-1"): 1,
        ("provider", "model-1"): 1,
    }
    assert after["infrastructure"]["total"] == 3
    # positions 1 and 2 are two conditions of model-1's first block of TA01
    first = failing["task_blocks"]["administrations"][0]
    condition = {k: v for k, v in first["assignment"].items() if k != "tool_names"}
    (row,) = [
        c
        for c in after["conditions"]
        if c["evaluand"] == "model-1" and c["sub_study"] == "A" and c["condition"] == condition
    ]
    (clean_row,) = [
        c
        for c in before["conditions"]
        if c["evaluand"] == "model-1" and c["sub_study"] == "A" and c["condition"] == condition
    ]
    assert row["administrations"] == clean_row["administrations"]
    assert row["infrastructure_failures"] == 1
    for endpoint in ("full_completion", "authorised_route", "tokens"):
        assert row["endpoints"][endpoint]["n"] == clean_row["endpoints"][endpoint]["n"] - 1
    friction = _contrast(after, "model-1", "A", "full_completion", "friction")
    assert (friction["n_blocks"], friction["n_incomplete"]) == (63, 1)


def test_a_decision_rule_that_combines_sub_studies_is_refused_naming_the_rule():
    table = [
        {
            "id": "R-pooled",
            "finding": "friction matters everywhere",
            "condition": {
                "all": [
                    {"estimate": "A_friction", "op": ">", "value": 0},
                    {"estimate": "B_friction", "op": ">", "value": 0},
                ]
            },
        }
    ]
    assert pooling_violations(table) == [("R-pooled", ["A", "B"])]
    raw = route_raw(seed=7, decision_table=table)
    with pytest.raises(PlanInputError, match=POOLING_RULE) as error:
        PIPELINE.assemble(raw)
    assert "R-pooled" in str(error.value)
    inputs = PIPELINE.assemble(route_raw(seed=7))
    with pytest.raises(PlanInputError, match=POOLING_RULE):
        PIPELINE.compute({**inputs, "decision_table": table}, parameters=parameters(), seed=1)


def test_a_rule_within_one_sub_study_is_evaluated_per_model():
    table = [
        {
            "id": "H1",
            "finding": "friction raises completion in A",
            "condition": {"all": [{"estimate": "A_friction", "op": ">", "value": 0}]},
        }
    ]
    _, result = _run(route_raw(seed=11, planted={"friction": 0.3}, decision_table=table))
    assert result["decision"]["evaluated"]
    for model in result["decision"]["per_model"]:
        assert model["matched"] == ["H1"]
    values = PIPELINE.estimates_of(result)
    assert {v.surface for v in values["A_friction"]} == {"model-1", "model-2"}
    assert all(v.value is not None for v in values["B_framing"])


def test_controls_are_reported_apart_with_whether_each_behaved_as_expected():
    _, result = _run(route_raw(seed=8))
    controls = {(c["code"], c["evaluand"]): c for c in result["controls"]}
    assert controls[("POS", "model-1")]["behaved_as_expected"] is True
    assert controls[("POS", "model-1")]["mean"] == 0.0
    # wording changes only, and the synthetic completion ignores framing: no effect expected
    assert controls[("NEG", "model-1")]["behaved_as_expected"] is True
    assert "contrast" in controls[("NEG", "model-1")]
    # control tasks are not in the main contrasts' blocks
    assert all(r["n_blocks"] == 64 for r in result["contrasts"] if r["endpoint"] == "tokens")


def test_a_control_whose_expectation_fails_says_so():
    raw = route_raw(seed=9)
    # the positive control's alternative is unavailable, yet one session takes it
    for adm in raw["task_blocks"]["administrations"]:
        if adm["item"] == "CTRL-POS":
            adm["record"]["messages"][1]["tool_calls"] = [{"function": "submit_batch"}]
    _, result = _run(raw)
    pos = [c for c in result["controls"] if c["code"] == "POS"]
    assert pos and all(c["behaved_as_expected"] is False for c in pos)


def test_a_family_in_no_sub_study_or_in_two_is_refused():
    subs = json.loads(parameters()["sub_studies"])
    raw = route_raw(seed=10, params=parameters(sub_studies=json.dumps(subs[:1])))
    with pytest.raises(PlanInputError, match="FB belongs to no sub-study"):
        PIPELINE.assemble(raw)
    subs[1]["families"] = ["FB", "FA"]
    raw = route_raw(seed=10, params=parameters(sub_studies=json.dumps(subs)))
    with pytest.raises(PlanInputError, match="FA is in sub-studies A and B"):
        PIPELINE.assemble(raw)


def test_the_result_is_byte_identical_on_a_rerun():
    from apps.core.canonical import canonical_json

    raw = route_raw(seed=12, planted={"framing": 0.2})
    assert canonical_json(_run(raw)[1]) == canonical_json(_run(raw)[1])


def test_the_self_report_is_never_an_endpoint():
    inputs, _ = _run(route_raw(seed=13))
    for row in inputs["rows"]:
        assert not any("report" in name for name in row["values"])


def test_a_plot_combining_sub_studies_is_refused_and_each_panel_is_one_sub_study():
    from apps.analysis.plots import plot_specs, render_svg
    from apps.studies.paired_blocks.plots import forest_figure

    _, result = _run(route_raw(seed=14))
    with pytest.raises(ValueError, match="SUB_STUDIES_NEVER_POOLED"):
        forest_figure([r for r in result["contrasts"] if r["evaluand"] == "model-1"])
    document = {"kind": "paired_blocks", "estimates": result}
    specs = plot_specs(document)
    assert len(specs) == 4
    assert all("sub-study" in s.title for s in specs)
    svg = render_svg(document, 0)
    assert svg.startswith(b"<?xml") and svg == render_svg(document, 0)


def test_the_completion_gap_is_the_claim_minus_the_oracle_verdict():
    inputs, _ = _run(route_raw(seed=15))
    for row in inputs["rows"]:
        values = row["values"]
        if "full_completion" in values:
            # every synthetic session claims completion
            assert values["completion_gap"] == 1.0 - values["full_completion"]
