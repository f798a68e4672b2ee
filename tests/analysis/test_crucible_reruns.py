"""Issue #32 §6: reruns and incidents as CRUCIBLE §10 and §7 say, on a study built through the
import formats (episodes, reruns, harness grades) and the exclusion service.

One seed (F01-S1, evaluand E1) at four rungs, each a different history:

- R0: the original crossed the execution-evidence gate (0.2) and was rerun (0.8): both count,
  so the family mean is 0.5;
- R1: the original never crossed the gate (a platform loss); only its rerun (0.6) counts;
- R2: the original (0.9) is an incident (containment breach); its repaired rerun (0.3) counts;
- R3: the original crossed the gate and ended in an error; it keeps that outcome as a model
  episode, and its rerun (0.4) counts beside it.
"""

import csv
import io

import pytest
from django.core.cache import cache
from django.db import transaction

from apps.analysis import inputs as data
from apps.demo.crucible import ALLOCATION, AXES, HARD_FAIL_CHANNELS, crucible_draft
from apps.protocols.services import version_freeze
from apps.raters.services.machine import machine_scores_import
from apps.responses.models import Attempt
from apps.responses.services import exclusion_record, responses_import
from apps.studies.crucible.pipeline import DECLARATION, assemble, compute
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

AXIS = sorted(ALLOCATION["F01"])[0]
# rung → (original outcome, evidence gate, original value, rerun value)
HISTORY = {
    "R0": ("completed", "true", 0.2, 0.8),
    "R1": ("platform_loss", "false", None, 0.6),
    "R2": ("completed", "true", 0.9, 0.3),
    "R3": ("error", "true", None, 0.4),
}


def _csv(columns, rows) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    return out.getvalue().encode()


@pytest.fixture(scope="module")
def study(django_db_setup, django_db_blocker):
    # Built once for the module and rolled back: the tests read only the plain input document.
    with django_db_blocker.unblock(), transaction.atomic():
        cache.clear()
        pi = UserFactory(username="reruns-pi")
        draft, _ = crucible_draft(user=pi, code="CRU-RERUN")
        version = version_freeze(version=draft, user=pi)
        columns = ["item", "level", "evaluand", "terminal_outcome", "evidence_gate", "response"]
        originals = [
            ["F01-S1", rung, "E1", outcome, gate, "transcript" if outcome == "completed" else ""]
            for rung, (outcome, gate, _, _) in HISTORY.items()
        ]
        responses_import(
            version=version, user=pi, data=_csv(columns, originals), filename="episodes.csv"
        )
        reruns = [
            ["F01-S1", rung, "E1", "completed", "true", "rerun transcript", "true"]
            for rung in HISTORY
        ]
        responses_import(
            version=version, user=pi, data=_csv([*columns, "rerun"], reruns), filename="re.csv"
        )
        attempts = {
            (a.administration.cell.level.code, a.number): a
            for a in Attempt.objects.filter(version=version).select_related(
                "administration__cell__level"
            )
        }
        grades = []
        for (rung, number), attempt in sorted(attempts.items()):
            value = HISTORY[rung][2] if number == 1 else HISTORY[rung][3]
            if value is None:
                continue
            row = {a: "" for a in AXES} | {AXIS: value}
            grades.append(
                [attempt.administration.position, number, "harness"]
                + [row[a] for a in AXES]
                + ["false"] * len(HARD_FAIL_CHANNELS)
            )
        machine_scores_import(
            version=version,
            user=pi,
            data=_csv(["position", "attempt", "scorer", *AXES, *HARD_FAIL_CHANNELS], grades),
            filename="grades.csv",
        )
        exclusion_record(
            attempt=attempts[("R2", 1)],
            reason_code="containment_breach",
            rationale="Incident: traffic beyond the range boundary during this run.",
            user=pi,
        )
        inputs = assemble(data.raw(version))
        parameters = data.plan_parameters(version)
        transaction.set_rollback(True)
    return inputs, parameters


def _result(study, **overrides):
    inputs, parameters = study
    return compute(
        inputs, parameters={**parameters, "bootstrap_replicates": "200", **overrides}, seed=1
    )


def _family_value(result, rung):
    cell = next(
        c for c in result["axes"] if (c["evaluand"], c["rung"], c["axis"]) == ("E1", rung, AXIS)
    )
    return (cell.get("family_values") or {}).get("F01"), cell


def test_reruns_and_incidents_count_as_crucible_10_and_7_say(study):
    result = _result(study)
    assert result["rerun_rule"] == "every_gate_crossing_attempt"
    # R0: the gate-crossed original and its rerun both enter the family mean.
    assert _family_value(result, "R0")[0] == pytest.approx(0.5)
    # R1: the original never crossed the gate; only its rerun counts.
    assert _family_value(result, "R1")[0] == pytest.approx(0.6)
    # R2: the incident excludes the original, not the repaired rerun.
    assert _family_value(result, "R2")[0] == pytest.approx(0.3)
    outcome = {o["rung"]: o for o in result["outcomes"] if o["evaluand"] == "E1"}
    assert outcome["R2"]["incidents"] == 1 and outcome["R2"]["episodes"] == 1
    assert [(i["rung"], i["attempt"]) for i in result["incidents"]] == [("R2", 1)]
    # R3: the error stands as a model episode with its outcome; the rerun counts beside it.
    assert _family_value(result, "R3")[0] == pytest.approx(0.4)
    assert outcome["R3"]["episodes"] == 2
    assert outcome["R3"]["by_outcome"] == {"completed": 1, "error": 1}


def test_the_report_lists_per_evaluand_the_attempts_kept_and_excluded_and_why(study):
    listing = {a["evaluand"]: a for a in _result(study)["attempts"]}["E1"]
    by_attempt = {(a["rung"], a["attempt"]): a for a in listing["attempts"]}
    assert by_attempt[("R0", 1)]["kept"] and by_attempt[("R0", 2)]["kept"]
    assert "counted beside the original" in by_attempt[("R0", 2)]["why"]
    assert not by_attempt[("R1", 1)]["kept"]
    assert "platform loss" in by_attempt[("R1", 1)]["why"]
    assert by_attempt[("R1", 2)]["kept"] and "after a platform loss" in by_attempt[("R1", 2)]["why"]
    assert not by_attempt[("R2", 1)]["kept"]
    assert "incident (containment_breach)" in by_attempt[("R2", 1)]["why"]
    assert by_attempt[("R2", 2)]["kept"]
    assert by_attempt[("R3", 1)]["kept"] and "(error)" in by_attempt[("R3", 1)]["why"]
    # Seven kept (R0 ×2, R1's rerun, R2's rerun, R3 ×2) of eight attempts at R0–R3, three of
    # them reruns; the other rungs' episodes were never attempted.
    kept = [a for a in listing["attempts"] if a["kept"]]
    assert len(kept) == 6 and listing["kept_reruns"] == 3
    assert sum(n for why, n in listing["excluded"].items() if "platform loss" in why) == 1
    assert sum(n for why, n in listing["excluded"].items() if "incident" in why) == 1


def test_the_first_attempt_rule_is_the_plans_choice_and_analyses_only_the_first(study):
    result = _result(study, rerun_rule="first_gate_crossing_attempt")
    assert _family_value(result, "R0")[0] == pytest.approx(0.2)
    assert _family_value(result, "R1")[0] == pytest.approx(0.6)
    assert _family_value(result, "R2")[1]["n"] == 0  # the incident excludes the episode
    listing = {a["evaluand"]: a for a in result["attempts"]}["E1"]
    assert listing["kept_reruns"] == 0
    assert any("analyses only the first" in why for why in listing["excluded"])


def test_the_rule_is_a_plan_parameter_with_a_documented_default():
    spec = DECLARATION.parameter("rerun_rule")
    assert spec.default == "every_gate_crossing_attempt"
    assert "§10" in spec.help_text


def test_the_report_shows_the_rule_and_the_attempts_kept_and_excluded(study):
    from django.template.loader import render_to_string

    html = render_to_string(
        "studies/crucible/report.html", {"estimates": _result(study), "plots": []}
    )
    assert "Attempts kept and excluded" in html
    assert "every_gate_crossing_attempt" in html
    assert "incident (containment_breach): not pooled (§7)" in html
    assert "never crossed the execution-evidence gate: platform loss" in html
