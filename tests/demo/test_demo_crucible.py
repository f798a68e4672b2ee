"""``make demo-crucible`` end to end: the project's synthetic CRUCIBLE study built through the
services and the real importers, frozen through the freeze gate, analysed on the Celery path,
unsealed and printed. The acceptance verdicts are checked against what the drawn grades imply,
computed here straight from the imported machine scores, not from the pipeline's output."""

import pytest
from django.core.management import call_command

from apps.analysis.models import AnalysisRun
from apps.analysis.selectors import result_document
from apps.deviations.models import LogEntry
from apps.protocols.models import ProtocolVersion
from apps.raters.models import MachineScore
from apps.responses.models import Attempt, RosterEntry

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(900)]


def test_make_demo_crucible_end_to_end():
    from io import StringIO

    out = StringIO()
    call_command("demo_crucible", stdout=out)
    demo = out.getvalue()
    _builds_freezes_imports_and_prints_the_verdicts(demo)
    _errors_keep_their_outcome_and_platform_losses_are_rerun()
    _the_incident_is_reported_and_not_pooled()
    _the_inconclusive_control_keeps_its_episodes_out()
    _the_scope_discipline_estimate_matches_the_imported_grades()
    again = StringIO()
    call_command("demo_crucible", stdout=again)
    assert again.getvalue().startswith("Found ")
    assert AnalysisRun.objects.filter(version__protocol__code="CRUCIBLE-DEMO").count() == 2


def _builds_freezes_imports_and_prints_the_verdicts(demo):
    version = ProtocolVersion.objects.get(protocol__code="CRUCIBLE-DEMO")
    assert version.state == "frozen"
    assert "maximum acceptable rung" in demo
    assert "Roster refused a bare model name" in demo and "provider" in demo
    assert sorted(RosterEntry.objects.filter(version=version).values_list("code", flat=True)) == [
        "E1",
        "E2",
        "E3",
    ]
    kinds = set(LogEntry.objects.filter(protocol=version.protocol).values_list("kind", flat=True))
    assert {
        "freeze",
        "import",
        "platform_loss",
        "rerun",
        "exclusion",
        "control_validation",
        "outcome_unsealed",
    } <= kinds
    run = AnalysisRun.objects.filter(version=version).first()
    assert run.state == "succeeded"
    estimates = result_document(run)["estimates"]
    assert len(estimates["axes"]) == 3 * 4 * 12
    assert estimates["interval"]["replicates"] == 10000
    # Every policy × evaluand has a verdict line in the printed table.
    for row in estimates["acceptance"]:
        assert f"{row['policy']:<14} {row['evaluand']:<9} {row['verdict']}" in demo


def _errors_keep_their_outcome_and_platform_losses_are_rerun():
    version = ProtocolVersion.objects.get(protocol__code="CRUCIBLE-DEMO")
    estimates = result_document(AnalysisRun.objects.filter(version=version).first())["estimates"]
    errors = Attempt.objects.filter(version=version, number=1, terminal_outcome="error").count()
    losses = Attempt.objects.filter(version=version, terminal_outcome="platform_loss").count()
    assert errors and losses
    assert Attempt.objects.filter(version=version, number=2).count() == errors + losses
    analysed_errors = sum(o["by_outcome"].get("error", 0) for o in estimates["outcomes"])
    assert analysed_errors == errors  # the rerun did not replace them
    assert estimates["counts"]["platform_loss_attempts"] == losses
    assert sum(o["not_executed"] for o in estimates["outcomes"]) == 0  # every loss was rerun


def _the_incident_is_reported_and_not_pooled():
    version = ProtocolVersion.objects.get(protocol__code="CRUCIBLE-DEMO")
    estimates = result_document(AnalysisRun.objects.filter(version=version).first())["estimates"]
    (incident,) = estimates["incidents"]
    assert (incident["evaluand"], incident["rung"], incident["seed"]) == ("E2", "R3", "F03-S2")
    assert incident["reason_code"] == "containment_breach"
    verdicts = {(a["policy"], a["evaluand"]): a for a in estimates["acceptance"]}
    r3 = verdicts[("conservative", "E2")]["rungs"][3]
    assert "1 incidents exceed the ceiling 0" in r3["failures"]


def _the_scope_discipline_estimate_matches_the_imported_grades():
    # Recompute one cell by hand from the machine scores: E1 × R0 × scope_discipline is the
    # mean over ranking families of the mean of their seeds' grades, every graded attempt that
    # crossed the gate and was not excluded counting (CRUCIBLE §10: the error reruns too).
    version = ProtocolVersion.objects.get(protocol__code="CRUCIBLE-DEMO")
    estimates = result_document(AnalysisRun.objects.filter(version=version).first())["estimates"]
    cell = next(
        c
        for c in estimates["axes"]
        if (c["evaluand"], c["rung"], c["axis"]) == ("E1", "R0", "scope_discipline")
    )
    by_family = {}
    for score in MachineScore.objects.filter(
        version=version,
        field="scope_discipline",
        response__attempt__administration__evaluand__rosters__code="E1",
        response__attempt__administration__cell__level__code="R0",
    ).select_related("response__attempt__administration__cell__item"):
        value = score.value
        item = score.response.attempt.administration.cell.item.code
        if score.response.attempt.exclusions.exists():
            continue
        by_family.setdefault(item.split("-")[0], {}).setdefault(item, []).append(float(value))
    seed_means = {f: [sum(v) / len(v) for v in seeds.values()] for f, seeds in by_family.items()}
    expected = sum(sum(v) / len(v) for v in seed_means.values()) / len(seed_means)
    assert cell["estimate"] == pytest.approx(expected)
    assert cell["families"] == sorted(by_family)


def _the_inconclusive_control_keeps_its_episodes_out():
    version = ProtocolVersion.objects.get(protocol__code="CRUCIBLE-DEMO")
    estimates = result_document(AnalysisRun.objects.filter(version=version).first())["estimates"]
    assert estimates["control_validations"] == {"range-07": "inconclusive", "range-main": "pass"}
    blocked = {(o["evaluand"], o["rung"]): o["control_not_passed"] for o in estimates["outcomes"]}
    assert blocked[("E1", "R1")] == 1 and blocked[("E1", "R0")] == 0
    assert sum(blocked.values()) == 3  # F07-S1 at R1, for each of the three evaluands
