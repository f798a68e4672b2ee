"""CRUCIBLE §4, §8, §10: terminal outcomes, the execution-evidence flag and reruns at import."""

import pytest

from apps.analysis import inputs as data
from apps.responses.importing import ImportRejected
from apps.responses.models import Attempt, ResponseImport
from apps.responses.services import responses_import
from tests.factories import answer_rows, csv_bytes

pytestmark = pytest.mark.django_db

COLUMNS = [
    "item",
    "level",
    "evaluand",
    "repetition",
    "terminal_outcome",
    "evidence_gate",
    "response",
]


def _rows(frozen, **changes):
    rows = answer_rows(frozen)
    for row in rows:
        row["evidence_gate"] = ""
    for index, change in changes.items():
        rows[int(index.removeprefix("r"))].update(change)
    return rows


def _import(version, user, rows, **kwargs):
    kwargs.setdefault("filename", "episodes.csv")
    return responses_import(version=version, user=user, data=csv_bytes(rows, COLUMNS), **kwargs)


def test_the_harness_outcomes_import_with_their_evidence_flag(frozen, pi):
    rows = _rows(
        frozen,
        r0={"terminal_outcome": "safety_stop", "response": "stopped at the range boundary"},
        r1={"terminal_outcome": "rate_limited", "response": ""},
        r2={"terminal_outcome": "malformed_output", "response": "{not json"},
        r3={"terminal_outcome": "parse_failure", "response": "??"},
        r4={"terminal_outcome": "platform_loss", "response": "", "evidence_gate": "false"},
    )
    _import(frozen, pi, rows)
    by_row = {a.source_row: a for a in Attempt.objects.filter(version=frozen)}
    assert by_row[2].terminal_outcome == "safety_stop" and by_row[2].evidence_gate is True
    assert by_row[3].terminal_outcome == "rate_limited" and by_row[3].evidence_gate is True
    assert by_row[6].terminal_outcome == "platform_loss" and by_row[6].evidence_gate is False
    assert by_row[7].evidence_gate is True  # derived: completed crossed the gate


def test_an_unknown_outcome_is_refused_naming_row_and_field_and_nothing_is_written(frozen, pi):
    rows = _rows(frozen, r2={"terminal_outcome": "exploded"})
    with pytest.raises(ImportRejected) as rejected:
        _import(frozen, pi, rows)
    assert [(p.row, p.field) for p in rejected.value.problems] == [(4, "terminal_outcome")]
    assert "safety_stop" in str(rejected.value)
    assert not Attempt.objects.exists() and not ResponseImport.objects.exists()


@pytest.mark.parametrize(
    ("outcome", "flag", "words"),
    [
        ("platform_loss", "true", "a platform loss never crossed"),
        ("error", "false", "is a platform loss, not 'error'"),
        ("completed", "maybe", "neither true nor false"),
    ],
)
def test_an_evidence_flag_that_contradicts_the_outcome_is_refused(frozen, pi, outcome, flag, words):
    response = "" if outcome != "completed" else "text"
    rows = _rows(
        frozen, r1={"terminal_outcome": outcome, "evidence_gate": flag, "response": response}
    )
    with pytest.raises(ImportRejected) as rejected:
        _import(frozen, pi, rows)
    assert [(p.row, p.field) for p in rejected.value.problems] == [(3, "evidence_gate")]
    assert words in str(rejected.value)
    assert not Attempt.objects.exists()


def test_an_error_that_crossed_the_gate_keeps_its_outcome_after_a_rerun(frozen, pi):
    rows = _rows(frozen, r0={"terminal_outcome": "error", "response": ""})
    _import(frozen, pi, rows)
    rerun = dict(rows[0], terminal_outcome="completed", response="second try", rerun="true")
    responses_import(
        version=frozen,
        user=pi,
        data=csv_bytes([rerun], [*COLUMNS, "rerun"]),
        filename="rerun.csv",
    )
    assert Attempt.objects.filter(version=frozen).count() == len(rows) + 1  # nothing erased
    first = Attempt.objects.get(source_row=2, number=1)
    entry = next(
        e
        for e in data.observations(frozen)["administrations"]
        if e["position"] == first.administration.position
    )
    assert entry["attempt"] == 1 and entry["terminal_outcome"] == "error"


def test_a_rerun_replaces_an_attempt_that_never_crossed_the_gate(frozen, pi):
    rows = _rows(frozen, r0={"terminal_outcome": "platform_loss", "response": ""})
    _import(frozen, pi, rows)
    rerun = dict(rows[0], terminal_outcome="completed", response="second try", rerun="true")
    responses_import(
        version=frozen,
        user=pi,
        data=csv_bytes([rerun], [*COLUMNS, "rerun"]),
        filename="rerun.csv",
    )
    first = Attempt.objects.get(source_row=2, number=1)
    observed = data.observations(frozen)
    entry = next(
        e for e in observed["administrations"] if e["position"] == first.administration.position
    )
    assert entry["attempt"] == 2 and entry["terminal_outcome"] == "completed"
    assert observed["counts"]["platform_loss_attempts"] == 1


def test_a_control_validation_is_recorded_and_logged_and_an_unknown_result_refused(frozen, pi):
    from django.core.exceptions import ValidationError

    from apps.deviations.models import LogEntry
    from apps.responses.services import control_validation_record

    record = control_validation_record(
        version=frozen,
        environment="range-1",
        result="inconclusive",
        rationale="no reading",
        user=pi,
    )
    assert record.result == "inconclusive"
    entry = LogEntry.objects.get(kind="control_validation")
    assert "range-1: inconclusive" in entry.rationale
    with pytest.raises(ValidationError) as refused:
        control_validation_record(
            version=frozen, environment="range-1", result="probably", rationale="x", user=pi
        )
    assert "result" in refused.value.message_dict
