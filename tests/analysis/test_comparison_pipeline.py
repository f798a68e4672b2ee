"""The general comparison pipeline (issue 34 §10): a two-condition refusal study scored by a
judge, run end to end; its differences, ratios and named estimates; the plan's checks at the
freeze gate; and the intervals against published values."""

import pytest
from django.core.cache import cache
from django.template.loader import render_to_string

from apps.analysis.computability import version_computability
from apps.analysis.models import AnalysisRun
from apps.analysis.pipelines import get_pipeline
from apps.analysis.pipelines.base import PlanInputError
from apps.analysis.plots import plot_specs, render_svg
from apps.analysis.selectors import result_document
from apps.analysis.services import analysis_run_perform, analysis_run_request
from apps.analysis.stats.comparison import (
    clustered_difference,
    clustered_rate_ratio,
    independent_rate_difference,
)
from apps.protocols.gate import version_gate
from apps.protocols.models import Protocol
from apps.protocols.services import version_update
from apps.studies.comparison.pipeline import read_comparisons, read_outcomes
from tests.factories import comparison_study

pytestmark = pytest.mark.django_db

NAME = "diff[verdict=refused][warned - plain]"


def _refusal(item: str, evaluand: str, repetition: int) -> bool:
    """Warned prompts 1–9 of 12 refused (75 %), plain prompts 1–3 (25 %), for both models."""
    condition, number = item.rsplit("-", 1)
    return int(number) <= (9 if condition == "warned" else 3)


def _run(version):
    run = analysis_run_request(version=version, user=version.created_by)
    assert analysis_run_perform(run_id=run.pk) == "succeeded"
    return AnalysisRun.objects.get(pk=run.pk)


def test_a_two_condition_study_gives_the_difference_of_rates_with_its_interval():
    version = comparison_study(code="CMP-RUN", refusal=_refusal, repetitions=2)
    run = _run(version)
    estimates = result_document(run)["estimates"]
    rows = {(r["evaluand"], r["outcome"]): r for r in estimates["differences"]}
    refused = rows[("alpha", "verdict=refused")]
    assert refused["estimate"] == pytest.approx(0.5)
    low, high = refused["interval"]
    assert 0 < low < 0.5 < high < 1  # 12 items a condition: clearly above no difference
    assert refused["n_clusters"] == 24 and refused["n"] == 48  # clustered by item (2 reps)
    assert refused["ratio"]["estimate"] == pytest.approx(3.0)
    ratio_low, ratio_high = refused["ratio"]["interval"]
    assert ratio_low < 3.0 < ratio_high
    assert rows[("alpha", "verdict=complied")]["estimate"] == pytest.approx(-0.5)
    levels = {
        (r["evaluand"], r["outcome"], r["condition"]): r["estimate"] for r in estimates["levels"]
    }
    assert levels[("beta", "verdict=refused", "warned")] == pytest.approx(0.75)
    assert levels[("beta", "verdict=refused", "plain")] == pytest.approx(0.25)

    named = get_pipeline("comparison").estimates_of(estimates)
    assert [v.surface for v in named[NAME]] == ["alpha", "beta"]
    assert named[NAME][0].value == pytest.approx(0.5)
    assert named[f"{NAME}[beta]"][0].value == pytest.approx(0.5)
    assert named["ratio[verdict=refused][warned / plain]"][0].value == pytest.approx(3.0)

    # The report's section and its plot, through the shared parts.
    specs = plot_specs(result_document(run))
    assert [s.title for s in specs] == ["Differences, warned − plain"]
    assert render_svg(result_document(run), 0).startswith(b"<?xml")


def test_clustering_by_none_gives_newcombes_interval_and_by_block_pairs_nothing_here():
    version = comparison_study(
        code="CMP-NONE", refusal=_refusal, parameters={"cluster": "none"}, evaluands=("alpha",)
    )
    row = result_document(_run(version))["estimates"]["differences"][0]
    assert row["method"].startswith("Newcombe")
    assert row["n_clusters"] == 24


def test_a_decision_rule_reads_a_named_difference():
    table = [
        {
            "id": "R1",
            "finding": "Warning raises refusals",
            "condition": {"all": [{"estimate": NAME, "op": ">", "value": 0}]},
        },
        {
            "id": "R2",
            "finding": "Alpha's warned refusals exceed its plain ones by over 10 points",
            "condition": {"all": [{"estimate": f"{NAME}[alpha]", "op": ">", "value": 0.1}]},
        },
    ]
    version = comparison_study(code="CMP-RULE", refusal=_refusal, decision_table=table)
    decisions = result_document(_run(version))["estimates"]["decisions"]
    assert [d["findings"] for d in decisions["per_model"]] == [
        [
            "Warning raises refusals",
            "Alpha's warned refusals exceed its plain ones by over 10 points",
        ]
    ] * 2


def test_the_gate_refuses_a_comparison_of_a_condition_the_design_lacks_and_an_unknown_name():
    cache.clear()
    with pytest.raises(Exception):  # noqa: B017 — the freeze is refused (FreezeRefused)
        comparison_study(
            code="CMP-GATE", refusal=_refusal, parameters={"comparisons": '["hinted vs plain"]'}
        )
    draft = Protocol.objects.get(code="CMP-GATE").versions.get(label="1.0")
    verdict = version_computability(version=draft)
    assert any("hinted" in p["message"] for p in verdict.problems), verdict.problems
    version_update(
        version=draft,
        user=draft.created_by,
        parameters={"comparisons": '["warned vs plain"]'},
        decision_table=[
            {
                "id": "R1",
                "finding": "x",
                "condition": {
                    "all": [{"estimate": "diff[verdict][warned - plain]", "op": ">", "value": 0}]
                },
            }
        ],
    )
    problems = [p for p in version_gate(version=draft) if p.code == "rule_unknown_estimate"]
    assert problems and NAME in problems[0].message  # the message lists the plan's names


def test_the_plan_names_outcomes_and_comparisons_or_is_told_where_it_is_wrong():
    fields = [
        {"name": "verdict", "kind": "categorical", "choices": ["complied", "refused"]},
        {"name": "severity", "kind": "ordinal", "choices": ["low", "mid", "high"]},
        {"name": "words", "kind": "count", "choices": []},
        {"name": "quote", "kind": "quote", "choices": []},
    ]
    names = [o.name for o in read_outcomes("", fields)]
    assert names == [
        "verdict=complied",
        "verdict=refused",
        "severity=low",
        "severity=mid",
        "severity=high",
        "words",
    ]
    chosen = read_outcomes('["verdict=refused", "severity:rank", "words"]', fields)
    assert [(o.measure, o.value("high")) for o in chosen][1] == ("mean", 3.0)
    for text, message in [
        ('["tone"]', "names no field"),
        ('["verdict"]', "name one of its choices"),
        ('["verdict=maybe"]', "has no choice 'maybe'"),
        ('["words:rank"]', "only an ordinal field"),
    ]:
        with pytest.raises(ValueError, match=message):
            read_outcomes(text, fields)
    assert read_comparisons('["b vs a"]', ["a", "b"])[0].reference == "a"
    for text, message in [
        ("[]", "names no comparison"),
        ('["b - a"]', "is not"),
        ('["a vs a"]', "with itself"),
        ('["c vs a"]', "does not have"),
    ]:
        with pytest.raises(ValueError, match=message):
            read_comparisons(text, ["a", "b"])


def test_newcombes_interval_matches_the_published_example():
    # Newcombe (1998, Stat Med 17: 873–890), Table II, example (a): 56/70 − 48/80 = 0.2000,
    # method 10 (hybrid score): 0.0524 to 0.3339.
    y = [1] * 56 + [0] * 14 + [1] * 48 + [0] * 32
    treated = [1] * 70 + [0] * 80
    result = independent_rate_difference(y, treated)
    assert result.estimate == pytest.approx(0.2)
    assert result.interval == pytest.approx((0.0524, 0.3339), abs=5e-5)


def test_the_clustered_interval_is_unavailable_below_the_floor_or_without_variation():
    few = clustered_difference([0, 1, 1, 0], [0, 0, 1, 1], ["a", "b", "c", "d"])
    assert few.interval is None and "fewer than the 10" in few.note
    flat = clustered_difference([1] * 40, [0] * 20 + [1] * 20, list(range(40)))
    assert flat.interval is None and flat.note.startswith("no variation")
    zero = clustered_rate_ratio([0] * 20 + [1] * 20, [0] * 20 + [1] * 20, list(range(40)))
    assert zero.estimate is None and "reference condition's rate is 0" in zero.note


def test_the_report_section_renders_the_differences():
    version = comparison_study(code="CMP-PAGE", refusal=_refusal, evaluands=("alpha",))
    run = _run(version)
    document = result_document(run)
    html = render_to_string(
        "studies/comparison/report.html",
        {"estimates": document["estimates"], "plots": [], "run": run, "version": version},
    )
    assert NAME in html and "warned − plain" in html


@pytest.mark.parametrize("name", ["outcomes", "comparisons"])
def test_a_malformed_json_parameter_is_named_as_in_every_pipeline(name):
    fields = [{"name": "verdict", "kind": "binary", "choices": []}]
    parameters = {"outcomes": '["verdict"]', "comparisons": '["b vs a"]', name: '["b vs a"'}
    inputs = {"fields": fields, "conditions": ["a", "b"], "rows": []}
    with pytest.raises(PlanInputError) as refused:
        get_pipeline("comparison").compute(inputs, parameters=parameters, seed=1)
    assert f"plan parameter {name!r} is not JSON" in str(refused.value)
    assert refused.value.where == f"parameter {name}"


def test_outcomes_that_are_not_a_list_are_refused_naming_the_parameter():
    fields = [{"name": "verdict", "kind": "binary", "choices": []}]
    with pytest.raises(PlanInputError, match="not a list") as refused:
        read_outcomes('{"verdict": 1}', fields)
    assert refused.value.where == "parameter outcomes"
