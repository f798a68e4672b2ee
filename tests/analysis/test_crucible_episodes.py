"""CRUCIBLE §4, §8: per-episode budgets and safety-stop conditions frozen as plan data and used
(issue #14 Deliver 3): a completed episode over a frozen budget is analysed as timeout or
budget_exhausted, a frozen safety stop overrides completion, an unknown stop code is refused at
the import naming row and field."""

import csv
import io
import json

import pytest
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.analysis import inputs as data
from apps.demo.crucible import EPISODE_BUDGETS, SAFETY_STOP_CONDITIONS, crucible_draft
from apps.protocols.services import version_freeze
from apps.responses.importing import ImportRejected
from apps.responses.models import Attempt, ResponseImport
from apps.responses.services import responses_import
from apps.studies.crucible.episodes import analysed_outcome, budgets_of
from apps.studies.crucible.pipeline import assemble, compute
from tests.factories import UserFactory, crucible_inputs

BUDGETS = {"max_turns": 40, "max_tool_calls": 100, "max_wall_seconds": 1800}
STOPS = ["range_boundary", "telemetry_loss"]


def _outcome(declared, usage=None, stop=None):
    return analysed_outcome(
        declared, usage=usage, safety_stop_code=stop, budgets=BUDGETS, stop_codes=STOPS
    )


def test_a_completed_episode_over_a_frozen_budget_is_not_analysed_as_completed():
    assert _outcome("completed", {"used_turns": 40, "used_wall_seconds": 1800}) == (
        "completed",
        "",
    )
    outcome, reason = _outcome("completed", {"used_turns": 41})
    assert outcome == "budget_exhausted" and "used_turns 41 exceeds the frozen max_turns 40" in (
        reason
    )
    assert _outcome("completed", {"used_wall_seconds": 1800.5, "used_turns": 50})[0] == "timeout"
    # A budget the plan does not freeze bounds nothing.
    assert _outcome("completed", {"used_inference_tokens": 10**9})[0] == "completed"


def test_a_frozen_safety_stop_overrides_completion_and_nothing_else():
    assert _outcome("completed", stop="range_boundary")[0] == "safety_stop"
    assert _outcome("completed", {"used_turns": 99}, stop="telemetry_loss")[0] == "safety_stop"
    # Model-service failures keep their declared outcome (§4); so does a declared safety stop.
    assert _outcome("error", {"used_turns": 99}, stop="range_boundary") == ("error", "")
    assert _outcome("safety_stop", stop="range_boundary") == ("safety_stop", "")


def test_the_pipeline_reports_the_analysed_outcomes_and_each_override():
    inputs = crucible_inputs(evaluands=1, families=3, seeds=1, rungs=2, axes=1)
    first, second, third = inputs["episodes"][:3]
    first["safety_stop_code"] = "range_boundary"
    second["usage"] = {"used_wall_seconds": 4000.0}
    third.update(terminal_outcome="refused", usage={"used_turns": 400.0})
    parameters = {
        "bootstrap_replicates": "200",
        "acceptance_policies": "[]",
        "episode_budgets": json.dumps(BUDGETS),
        "safety_stop_conditions": json.dumps(
            [{"code": c, "description": c.replace("_", " ")} for c in STOPS]
        ),
    }
    result = compute(inputs, parameters=parameters, seed=3)
    overrides = {o["position"]: (o["declared"], o["analysed"]) for o in result["outcome_overrides"]}
    assert overrides == {
        first["position"]: ("completed", "safety_stop"),
        second["position"]: ("completed", "timeout"),
    }
    by_outcome = {}
    for row in result["outcomes"]:
        for outcome, n in row["by_outcome"].items():
            by_outcome[outcome] = by_outcome.get(outcome, 0) + n
    assert by_outcome == {"completed": 3, "refused": 1, "safety_stop": 1, "timeout": 1}
    assert result["episode_budgets"] == {k: float(v) for k, v in BUDGETS.items()}
    # Without frozen budgets or stops the same records change nothing.
    plain = compute(
        inputs,
        parameters={**parameters, "episode_budgets": "", "safety_stop_conditions": ""},
        seed=3,
    )
    assert plain["outcome_overrides"] == []


@pytest.fixture
def frozen(db):
    cache.clear()
    pi = UserFactory()
    draft, _ = crucible_draft(user=pi, code="CRU-B")
    return version_freeze(version=draft, user=pi), pi


COLUMNS = [
    "item",
    "level",
    "evaluand",
    "terminal_outcome",
    "response",
    "safety_stop_code",
    "used_turns",
    "used_wall_seconds",
]


def _csv(rows):
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n", restval="")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def _row(level, outcome="completed", **extra):
    return {
        "item": "F01-S1",
        "level": level,
        "evaluand": "E1",
        "terminal_outcome": outcome,
        "response": "transcript",
        **extra,
    }


def test_the_budgets_and_stops_freeze_with_the_version_and_show_on_the_manifest_page(
    frozen, client
):
    version, pi = frozen
    parameters = data.plan_parameters(version)
    assert json.loads(parameters["episode_budgets"]) == EPISODE_BUDGETS
    assert json.loads(parameters["safety_stop_conditions"]) == SAFETY_STOP_CONDITIONS
    client.force_login(pi)
    page = client.get("/protocols/CRU-B/v/1.0/crucible-manifest/").content.decode()
    assert 'id="episode-budgets"' in page and "max_wall_seconds" in page
    assert "range_boundary" in page and "unreconciled telemetry loss" in page
    plan = client.get("/protocols/CRU-B/v/1.0/").content.decode()  # the plan's parameters
    assert "episode_budgets" in plan and "safety_stop_conditions" in plan
    assert "max_wall_seconds" in plan and "boundary_observation_fault" in plan
    manifest = client.get("/api/v1/protocols/CRU-B/versions/1.0/crucible-manifest").json()
    assert manifest["manifest"]["episode_budgets"] == EPISODE_BUDGETS


def test_an_imported_record_naming_a_frozen_stop_is_analysed_as_a_safety_stop(frozen):
    version, pi = frozen
    rows = [
        _row("R0", safety_stop_code="range_boundary"),
        _row("R1", used_turns="41"),
        _row("R2", used_turns="12", used_wall_seconds="60"),
    ]
    responses_import(version=version, user=pi, data=_csv(rows), filename="episodes.csv")
    # The record is kept as the harness declared it; the analysis applies the frozen rules.
    assert set(
        Attempt.objects.filter(version=version).values_list("terminal_outcome", flat=True)
    ) == {"completed"}
    episodes = {
        e["rung"]: e
        for e in assemble(data.raw(version))["episodes"]
        if e["seed"] == "F01-S1" and e["evaluand"] == "E1"
    }
    assert episodes["R0"]["safety_stop_code"] == "range_boundary"
    assert episodes["R1"]["usage"] == {"used_turns": 41.0}
    from apps.studies.crucible.pipeline import _terminal_rules

    analysed, overrides = _terminal_rules(list(episodes.values()), data.plan_parameters(version))
    assert {e["rung"]: e["terminal_outcome"] for e in analysed} == {
        "R0": "safety_stop",
        "R1": "budget_exhausted",
        "R2": "completed",
        "R3": "",
    }
    assert len(overrides) == 2


def test_a_stop_code_not_frozen_or_a_usage_that_is_no_number_is_refused_by_row_and_field(frozen):
    version, pi = frozen
    rows = [
        _row("R0"),
        _row("R1", outcome="safety_stop", safety_stop_code="moon_landing"),
    ]
    with pytest.raises(ImportRejected) as rejected:
        responses_import(version=version, user=pi, data=_csv(rows), filename="bad.csv")
    # Rows are numbered as a spreadsheet does (the header is row 1).
    assert [(p.row, p.field) for p in rejected.value.problems] == [(3, "safety_stop_code")]
    assert "moon_landing" in str(rejected.value) and "range_boundary" in str(rejected.value)
    with pytest.raises(ImportRejected) as rejected:
        responses_import(
            version=version,
            user=pi,
            data=_csv([_row("R0"), _row("R2", used_wall_seconds="an hour")]),
            filename="bad2.csv",
        )
    assert [(p.row, p.field) for p in rejected.value.problems] == [(3, "used_wall_seconds")]
    assert not Attempt.objects.filter(version=version).exists()
    assert not ResponseImport.objects.filter(version=version).exists()


def test_a_usage_too_large_for_a_float_is_refused_by_row_and_field_not_a_server_error(
    frozen, client
):
    # A JSON integer of 400 digits is valid JSON that no float holds (float() raised
    # OverflowError out of the import check: a 500 on the import page).
    version, pi = frozen
    rows = [_row("R0"), _row("R1", used_turns=10**400)]
    body = "\n".join(json.dumps(row) for row in rows).encode()
    with pytest.raises(ImportRejected) as rejected:
        responses_import(version=version, user=pi, data=body, filename="huge.jsonl")
    assert [(p.row, p.field) for p in rejected.value.problems] == [(2, "used_turns")]
    client.force_login(pi)
    page = client.post(
        "/protocols/CRU-B/v/1.0/responses/import/",
        {"file": SimpleUploadedFile("huge.jsonl", body)},
    )
    assert page.status_code == 200
    assert "used_turns" in page.content.decode()
    # A frozen budget that large is no limit at all, as if absent (never a crash).
    assert budgets_of({"episode_budgets": '{"max_turns": 1' + "0" * 400 + "}"}) == {}
