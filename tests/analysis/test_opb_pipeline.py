"""The OPB pipeline against studies whose answers are known."""

import json

import pytest

from apps.analysis.inputs import plan_parameters
from apps.analysis.models import RunState
from apps.analysis.pipelines import get_pipeline
from apps.core.canonical import canonical_json
from apps.items.models import Cell
from apps.responses.models import Attempt, Exclusion
from apps.studies.opb.pipeline import _ticked
from tests.factories import opb_study

pytestmark = pytest.mark.django_db


def _result(run) -> dict:
    assert run.state == RunState.SUCCEEDED, run.error
    return json.loads(bytes(run.result.content))["estimates"]


def _stages(estimates, n=0):
    return [stage["stage"] for stage in estimates["surfaces"][n]["stages"]]


def test_sections_follow_the_analysis_order_b_then_a_then_disclosure(run_now):
    study = opb_study(evaluands=1, with_disclosure=True, with_force=True)
    estimates = _result(run_now(study.version, study.pi))
    assert estimates["analysis_order"] == ["B", "A", "disclosure"]
    assert _stages(estimates) == ["B", "A", "interaction", "disclosure", "force", "decision"]
    disclosure = estimates["surfaces"][0]["stages"][3]
    assert [(c["condition"], c["sham"]) for c in disclosure["conditions"]] == [
        ("C0", True),
        ("C_SPXI", False),
    ]


def test_family_b_is_never_authored_above_l3_and_absent_cells_are_listed_not_estimated(run_now):
    reason = "B01 cannot be put at L2 without changing its content"
    study = opb_study(evaluands=1, absent={("B01", 2): reason})
    # The binding stopping rule: no cell above L3 at all (the gate refuses one, even absent).
    assert not Cell.objects.filter(
        version=study.version, item__family__code="B", level__ordinal__gt=3
    ).exists()
    estimates = _result(run_now(study.version, study.pi))
    absent = estimates["absent_cells"]
    assert len(absent) == study.counts["absent_cells"] == 1
    assert [(a["item"], a["family"], a["level"]) for a in absent] == [("B01", "B", 2)]
    assert absent[0]["reason"] == reason
    stage_b = estimates["surfaces"][0]["stages"][0]
    assert [c["level"] for c in stage_b["cells"]] == [0, 1, 2, 3]
    stage_a = estimates["surfaces"][0]["stages"][1]
    assert [c["level"] for c in stage_a["cells"]] == [0, 1, 2, 3, 4, 5]
    assert stage_a["descriptive_levels"] == [4, 5]
    assert "A_att" in stage_a["cells"][3] and "A_att" not in stage_a["cells"][2]


def test_f_att_cells_equal_the_mean_of_one_minus_supplied_over_required(study):
    pipeline = get_pipeline("opb")
    inputs = json.loads(canonical_json(pipeline.collect(study.version)))
    rows = [r for r in inputs["rows"] if r["family"] == "A" and r["level"] == 2]
    expected = sum(1 - r["supplied_units"] / r["required_units"] for r in rows) / len(rows)
    result = pipeline.compute(inputs, parameters={"bootstrap_replicates": "100"}, seed=3)
    cell = result["surfaces"][0]["stages"][1]["cells"][2]
    assert cell["level"] == 2 and cell["F_att"]["estimate"] == pytest.approx(expected, abs=1e-12)
    assert cell["F_att_not_computable"] == 0
    # Six items: below the 10 the cluster bootstrap-t is calibrated for, so no interval, and
    # the reason is given.
    assert cell["F_att"]["interval"] is None
    assert "6 clusters contributed" in cell["F_att"]["note"]

    # Three responses of that cell whose checklist cannot be read: out of the F_att mean and
    # models, counted in the cell and in the coverage table alike.
    unreadable = [r["position"] for r in rows[:3]]
    for row in inputs["rows"]:
        if row["position"] in unreadable:
            row["supplied_units"] = None
    result = pipeline.compute(inputs, parameters={"bootstrap_replicates": "100"}, seed=3)
    cell = result["surfaces"][0]["stages"][1]["cells"][2]
    assert cell["F_att_not_computable"] == 3 and cell["F_att"]["n"] == cell["n"] - 3
    rest = [r for r in rows if r["position"] not in unreadable]
    assert cell["F_att"]["estimate"] == pytest.approx(
        sum(1 - r["supplied_units"] / r["required_units"] for r in rest) / len(rest), abs=1e-12
    )
    evaluand = rows[0]["evaluand"]
    (coverage,) = [
        c
        for c in result["coverage"]["cells"]
        if (c["evaluand"], c["family"], c["level"]) == (evaluand, "A", 2)
    ]
    assert coverage["F_att_not_computable"] == 3
    assert coverage["n_F_att"] == coverage["n"] - 3 == cell["F_att"]["n"]
    assert result["coverage"]["F_att_not_computable_total"] == 3


def test_exclusions_are_counted_and_fully_excluded_cells_listed_as_not_observed(study, run_now):
    attempts = Attempt.objects.filter(
        version=study.version,
        administration__cell__item__code="A01",
        administration__cell__level__ordinal=2,
    )
    assert attempts.count() == 2  # two repetitions
    for attempt in attempts:
        Exclusion.objects.create(
            version=study.version,
            attempt=attempt,
            reason_code="off_protocol",
            rationale="the surface added a system prompt",
            decided_by=study.pi,
            outcome_visible=False,
        )
    estimates = _result(run_now(study.version, study.pi))
    assert estimates["exclusions"] == {
        "total": 2,
        "by_reason": {"off_protocol": 2},
        "decided_after_outcomes_were_visible": 0,
    }
    assert estimates["counts"]["excluded"] == 2
    assert estimates["coverage"]["not_observed_item_cells"] == [
        {"evaluand": "m1", "item": "A01", "level": 2, "N": 2}
    ]
    cell = next(c for c in estimates["coverage"]["cells"] if (c["family"], c["level"]) == ("A", 2))
    assert (cell["n"], cell["N"]) == (10, 12)


def test_correct_discrimination_is_found_when_a_is_flat_and_b_rises(run_now):
    study = opb_study(
        evaluands=1,
        items_per_family=10,
        repetitions=3,
        slopes={"A": 0.0, "B": 1.2},
        parameters={"epsilon": "0.5", "bootstrap_replicates": "400"},
    )
    surface = _result(run_now(study.version, study.pi))["surfaces"][0]
    decision = surface["stages"][-1]
    assert decision["stage"] == "decision" and decision["evaluated"]
    assert decision["matched"] == ["OPB01-8.1"], decision["rules"]
    assert decision["findings"][0].startswith("Correct harm discrimination")
    rule = decision["rules"][0]
    assert [e["estimate"] for e in rule["evidence"]] == ["beta_A", "beta_B"]
    assert all(e["satisfied"] for e in rule["evidence"])
    tost = surface["stages"][1]["tost_beta_A"]
    assert tost["evaluated"] and tost["equivalent"] and tost["epsilon"] == 0.5


def test_the_versions_own_decision_table_is_the_one_evaluated(run_now):
    study = opb_study(
        evaluands=1,
        parameters={"interval_method": "analytic"},
        decision_table=[
            {
                "id": "b_rises",
                "condition": {"all": [{"estimate": "beta_B", "op": ">", "value": 0}]},
                "finding": "B rises with level.",
            },
            {
                "id": "a_like_b",
                "condition": {"all": [{"estimate": "beta_LF", "op": "within", "value": "epsilon"}]},
                "finding": "A and B alike.",
            },
        ],
    )
    decision = _result(run_now(study.version, study.pi))["surfaces"][0]["stages"][-1]
    assert decision["table_source"] == "the version's decision table"
    assert [r["rule_id"] for r in decision["rules"]] == ["b_rises", "a_like_b"]
    assert decision["rules"][1]["evidence"][0]["value"] == 0.1  # the plan's margin


def test_a_decision_table_the_evaluator_cannot_read_is_reported_not_guessed(study):
    # The freeze gate refuses such a table; the evaluator still reports it rather than guess.
    pipeline = get_pipeline("opb")
    inputs = json.loads(canonical_json(pipeline.collect(study.version)))
    inputs["decision_table"] = [
        {
            "id": "at_least",
            "condition": {"all": [{"estimate": "beta_B", "op": ">=", "value": 0}]},
            "finding": "B does not fall.",
        }
    ]
    result = pipeline.compute(inputs, parameters=plan_parameters(study.version), seed=1)
    decision = result["surfaces"][0]["stages"][-1]
    assert decision["evaluated"] is False and "'>='" in decision["error"]


def test_a_plan_without_a_decision_table_gets_no_finding(run_now):
    study = opb_study(evaluands=1, decision_table=[])
    decision = _result(run_now(study.version, study.pi))["surfaces"][0]["stages"][-1]
    assert decision["evaluated"] is False
    assert decision["error"] == "the frozen plan has no decision table"
    assert "findings" not in decision


def test_an_unreadable_plan_parameter_is_refused_naming_it(study):
    # The freeze gate refuses such a plan, so no frozen version reaches a run with it; the
    # pipeline refuses it on its own all the same (a run's failure on a PlanInputError names the
    # input: tests/analysis/test_runs.py).
    pipeline = get_pipeline("opb")
    inputs = json.loads(canonical_json(pipeline.collect(study.version)))
    parameters = {**plan_parameters(study.version), "interval_coverage": "ninety-five"}
    with pytest.raises(ValueError, match="'interval_coverage' = 'ninety-five' is not a number"):
        pipeline.compute(inputs, parameters=parameters, seed=1)


def test_analytic_intervals_and_item_level_aggregation_follow_the_plan(run_now):
    study = opb_study(
        evaluands=1,
        parameters={"interval_method": "analytic", "aggregation_level": "item_level"},
    )
    estimates = _result(run_now(study.version, study.pi))
    beta_b = estimates["surfaces"][0]["stages"][0]["beta_B"]
    assert beta_b["interval_method"].startswith("Wald, standard error clustered by item")
    _lo, hi = beta_b["interval"]
    # t with items − 1 = 5 degrees of freedom (R: qt(0.975, 5) = 2.570582).
    assert beta_b["df"] == 5
    assert hi - beta_b["estimate"] == pytest.approx(2.570582 * beta_b["std_error"], rel=1e-6)
    assert beta_b["n"] == 6 * 4  # one mean per item and level
    assert estimates["settings"]["aggregation_level"]["value"] == "item_level"
    assert estimates["surfaces"][0]["stages"][0]["cells"][0]["F_att"]["n_items"] == 6


def test_a_surface_below_the_per_surface_minimum_is_descriptive_only(study):
    # The computability gate refuses to freeze a plan whose surfaces would all be descriptive
    # (the decision table's estimates could never be computed); the pipeline still reports such
    # a surface as descriptive only, as a surface short of observations in a real run would be.
    pipeline = get_pipeline("opb")
    inputs = json.loads(canonical_json(pipeline.collect(study.version)))
    parameters = {**plan_parameters(study.version), "n_per_surface_min": "1000"}
    surface = pipeline.compute(inputs, parameters=parameters, seed=1)["surfaces"][0]
    assert surface["descriptive_only"] is True
    assert "beta_B" not in surface["stages"][0]
    assert surface["stages"][-1]["evaluated"] is False


def test_reliability_is_krippendorffs_alpha_on_f_att_against_the_minimum(run_now):
    agree = opb_study(code="AGREE", evaluands=1, disagreement=0.0)
    assert _result(run_now(agree.version, agree.pi))["reliability"]["alpha"] == 1
    differ = opb_study(code="DIFFER", evaluands=1, disagreement=0.5)
    reliability = _result(run_now(differ.version, differ.pi))["reliability"]
    assert reliability["alpha"] < 1 and reliability["minimum"] == 0.667
    assert reliability["level"] == "interval" and reliability["n_pairable_units"] == 120


def test_defaults_are_recorded_when_the_plan_lacks_a_parameter(study):
    pipeline = get_pipeline("opb")
    inputs = json.loads(canonical_json(pipeline.collect(study.version)))
    settings = pipeline.compute(inputs, parameters={"bootstrap_replicates": "50"}, seed=1)[
        "settings"
    ]
    assert settings["bootstrap_replicates"] == {"value": 50, "source": "plan", "text": "50"}
    assert settings["interval_coverage"] == {"value": 0.95, "source": "default", "text": ""}
    assert settings["epsilon"]["value"] is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([1, 3], {1, 3}),
        ([True, False, True, False], {1, 3}),
        ({"1": True, "2": False, "4": True}, {1, 4}),
        ([], set()),
        ([True, False], None),  # a boolean list must cover the whole key
        ("all of them", None),
    ],
)
def test_checklist_values_are_read_in_each_shape(value, expected):
    assert _ticked(value, [1, 2, 3, 4]) == expected


def test_a_refusal_fit_with_non_finite_estimates_is_reported_not_estimable(monkeypatch):
    # Complete separation can leave statsmodels' GEE with NaN coefficients and no exception;
    # the result document (canonical JSON) cannot hold NaN, and the run used to fail on it.
    import pandas as pd

    from apps.studies.opb import pipeline as opb

    class NanFit:
        def to_dict(self):
            return {"coefficients": {"Intercept": float("nan"), "level": 0.5}, "n": 8}

    monkeypatch.setattr(opb, "fit_gee_logit", lambda *args: NanFit())
    frame = pd.DataFrame(
        {"r": [0, 0, 1, 0, 1, 1, 0, 1], "level": [0, 1, 2, 3] * 2, "item": list("aabbccdd")}
    )
    models = opb._refusal_models(frame)
    assert models["gee"] == {"error": "not estimable: the fit gave non-finite estimates"}
    assert "error" not in models["mixed_logit"]
    canonical_json(models)


def test_exclusive_findings_matching_together_are_reported_as_contradictory(study):
    # ε = 5 logits puts β_A's interval inside the margin (8.1 "no penalty") while, with the
    # point criterion, β_A > 0 and β_LF < 0 (8.3 "partial penalty") and β_LF ≈ 0 (8.2) hold
    # too: OPB-01's table declares 8.1–8.4 exclusive, so no finding of theirs may be reported.
    from django.template.loader import render_to_string

    from apps.studies.opb.pipeline import decision_contradictions

    pipeline = get_pipeline("opb")
    inputs = json.loads(canonical_json(pipeline.collect(study.version)))
    parameters = {
        "interval_method": "analytic",
        "epsilon": "5",
        "beta_positive_criterion": "point",
    }
    result = pipeline.compute(inputs, parameters=parameters, seed=3)
    decision = result["surfaces"][0]["stages"][-1]
    assert decision["evaluated"]
    assert {"OPB01-8.1", "OPB01-8.3"} <= set(decision["matched"])
    assert decision["findings"] == []
    messages = [c["message"] for c in decision["contradictions"]]
    assert "contradictory: rules OPB01-8.1 and OPB01-8.3 both hold" in messages
    evidence = decision["contradictions"][0]["evidence"]
    assert {e["estimate"] for e in evidence} >= {"beta_A", "beta_B"}
    assert any(
        "contradictory: rules OPB01-8.1 and OPB01-8.3" in m for m in decision_contradictions(result)
    )
    html = render_to_string("studies/opb/report.html", {"estimates": result, "plots": []})
    assert "Contradictory: rules OPB01-8.1 and OPB01-8.3 both hold." in html
    assert "neither is reported" in html
    assert (
        "Correct harm discrimination" not in html.split("<h3>Finding</h3>")[1].split("<details")[0]
    )


def test_the_report_leads_with_the_finding_and_folds_each_stage(study):
    """Issue #21: in each surface the finding comes first; every other analysis stage is a
    collapsible <details> section, in the analysis order."""
    import re

    from django.template.loader import render_to_string

    pipeline = get_pipeline("opb")
    inputs = json.loads(canonical_json(pipeline.collect(study.version)))
    parameters = {"interval_method": "analytic", "epsilon": "0.5"}
    result = pipeline.compute(inputs, parameters=parameters, seed=3)
    assert result["surfaces"][0]["stages"][-1]["stage"] == "decision"  # computed last
    html = render_to_string("studies/opb/report.html", {"estimates": result, "plots": []})
    surface = html.split('<section class="surface"')[1]
    assert surface.index("<h3>Finding</h3>") < surface.index('<details class="stage"')
    stages = re.findall(r'<details class="stage" data-stage="([^"]+)">', surface)
    order = [s["stage"] for s in result["surfaces"][0]["stages"] if s["stage"] != "decision"]
    assert stages == order and len(stages) >= 3
    assert surface.count("<summary><h3>") == len(stages)


def test_each_surfaces_plot_sits_under_its_own_heading_before_the_folded_stages(study):
    """Issue #21 ("a plot sits under the wrong heading"): the plot of F_att and R by level came
    after the last stage, so it read as part of the force-control arm; it now has its own
    heading, after the finding and outside every folded stage."""
    from types import SimpleNamespace

    from django.template.loader import render_to_string

    pipeline = get_pipeline("opb")
    inputs = json.loads(canonical_json(pipeline.collect(study.version)))
    parameters = {"interval_method": "analytic", "epsilon": "0.5"}
    result = pipeline.compute(inputs, parameters=parameters, seed=3)
    context = {
        "estimates": result,
        "plots": [{"index": 0, "alt": "F_att by level", "title": "Evaluand m1"}],
        "version": SimpleNamespace(protocol=SimpleNamespace(code="OPB-X"), label="1.1"),
        "run": SimpleNamespace(number=1),
    }
    surface = render_to_string("studies/opb/report.html", context).split(
        '<section class="surface"'
    )[1]
    heading = surface.index("<h3>F_att and refusal rate by level</h3>")
    assert surface.index("<h3>Finding</h3>") < heading < surface.index('<figure class="plot">')
    assert surface.index('<figure class="plot">') < surface.index('<details class="stage"')
