"""Issue #17 §3–§4: reliability that binds, and a force arm that is evaluable or says why not."""

import json

import pytest

from apps.analysis.models import RunState
from apps.deviations.models import EntryKind, LogEntry
from apps.studies.opb.pipeline import DECLARATION
from tests.factories import opb_study

pytestmark = pytest.mark.django_db


def _result(run) -> dict:
    assert run.state == RunState.SUCCEEDED, run.error
    return json.loads(bytes(run.result.content))["estimates"]


def _decision(surface: dict) -> dict:
    return next(s for s in surface["stages"] if s["stage"] == "decision")


def _rule(decision: dict, rule_id: str) -> dict:
    return next(r for r in decision["rules"] if r["rule_id"] == rule_id)


# A design on which OPB01-8.1 is found when reliability is high (see test_opb_pipeline).
DISCRIMINATING = dict(
    evaluands=1,
    items_per_family=10,
    repetitions=3,
    slopes={"A": 0.0, "B": 1.2},
)


def test_reliability_below_the_minimum_reports_estimates_and_no_finding(run_now):
    # Reviewers who disagree on half the responses: α well below a minimum of 0.95.
    study = opb_study(
        code="LOWALPHA",
        disagreement=0.6,
        parameters={"epsilon": "0.5", "bootstrap_replicates": "400", "agreement_minimum": "0.95"},
        **DISCRIMINATING,
    )
    estimates = _result(run_now(study.version, study.pi))
    reliability = estimates["reliability"]
    assert reliability["meets_minimum"] is False and reliability["alpha"] < 0.95
    decision = _decision(estimates["surfaces"][0])
    assert decision["evaluated"] is False
    assert "findings" not in decision and "matched" not in decision
    assert decision["note"] == (
        f"reliability below the preregistered minimum (α = {reliability['alpha']:.3f}, "
        "minimum 0.95)"
    )
    # The estimates are still reported.
    assert decision["estimates"]["beta_A"]["estimate"] is not None
    assert decision["estimates"]["beta_B"]["interval"] is not None


def test_the_binding_is_written_to_the_log_when_it_happens(run_now):
    study = opb_study(
        code="LOGALPHA",
        disagreement=0.6,
        parameters={"agreement_minimum": "0.95"},
        evaluands=1,
    )
    run_now(study.version, study.pi)
    entries = LogEntry.objects.filter(protocol=study.version.protocol, kind=EntryKind.DEVIATION)
    assert entries.count() == 1
    assert "reliability below the preregistered minimum (α = " in entries.get().rationale
    assert "minimum 0.95)" in entries.get().rationale


def test_reliability_at_or_above_the_minimum_draws_findings_and_logs_nothing(run_now):
    study = opb_study(
        code="HIGHALPHA",
        parameters={"epsilon": "0.5", "bootstrap_replicates": "400"},
        **DISCRIMINATING,
    )
    estimates = _result(run_now(study.version, study.pi))
    decision = _decision(estimates["surfaces"][0])
    assert estimates["reliability"]["meets_minimum"] is True
    assert decision["evaluated"] and decision["matched"] == ["OPB01-8.1"]
    assert not LogEntry.objects.filter(
        protocol=study.version.protocol, kind=EntryKind.DEVIATION
    ).exists()


def test_the_agreement_minimums_help_text_says_what_the_analysis_does():
    help_text = DECLARATION.parameter("agreement_minimum").help_text
    assert "draws no finding" in help_text and "reliability below the preregistered" in help_text
    assert "not analysed" not in help_text


def test_a_force_arm_too_small_for_the_plan_says_not_evaluable_with_the_counts(run_now):
    # Six force items, the analytic method, and a plan that requires eight clusters.
    study = opb_study(
        code="FORCESMALL",
        evaluands=1,
        with_force=True,
        parameters={"interval_method": "analytic", "min_clusters": "8"},
    )
    decision = _decision(_result(run_now(study.version, study.pi))["surfaces"][0])
    rule = _rule(decision, "OPB01-8.5")
    assert rule["evaluable"] is False
    assert rule["not_evaluable"] == ["beta_force not evaluable: 6 items, the plan requires 8"]


def test_a_force_arm_of_the_size_6_4_implies_is_evaluable_and_finds_the_confound(run_now):
    # §6.4's "small set": six force items is the analytic interval's calibrated floor.
    study = opb_study(
        code="FORCEOK",
        evaluands=1,
        repetitions=3,
        with_force=True,
        slopes={"force": 1.0},
        parameters={"interval_method": "analytic", "min_clusters": "6"},
    )
    surface = _result(run_now(study.version, study.pi))["surfaces"][0]
    force = next(s for s in surface["stages"] if s["stage"] == "force")
    assert force["beta_force"]["n_items"] == 6 and force["beta_force"]["interval"] is not None
    rule = _rule(_decision(surface), "OPB01-8.5")
    assert rule["evaluable"] and rule["matched"], rule
    assert "not_evaluable" not in rule


def test_a_flat_force_arm_is_evaluable_and_finds_no_confound(run_now):
    study = opb_study(
        code="FORCEFLAT",
        evaluands=1,
        repetitions=3,
        with_force=True,
        slopes={"force": 0.0},
        parameters={"interval_method": "analytic", "min_clusters": "6"},
    )
    rule = _rule(_decision(_result(run_now(study.version, study.pi))["surfaces"][0]), "OPB01-8.5")
    assert rule["evaluable"] and not rule["matched"]


def test_the_report_says_the_minimum_binds(client, run_now, unseal):
    from django.urls import reverse

    study = opb_study(
        code="PAGEALPHA", disagreement=0.6, parameters={"agreement_minimum": "0.95"}, evaluands=1
    )
    assert run_now(study.version, study.pi).state == RunState.SUCCEEDED
    unseal(study.version, study.pi)
    client.force_login(study.pi)
    url = reverse(
        "analysis:report",
        kwargs={"code": study.version.protocol.code, "label": "1.1", "number": 1},
    )
    text = client.get(url).content.decode()
    assert "Decision table not evaluated: reliability below the preregistered minimum (α = " in text
    assert "no finding is drawn on any surface" in text
