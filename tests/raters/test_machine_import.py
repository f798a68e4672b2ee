"""Importing machine scores: CSV, JSON Lines and Inspect AI logs; all or nothing; idempotent."""

import pytest
from django.core.exceptions import ValidationError

from apps.deviations.models import LogEntry
from apps.raters.machine_import import with_scorer
from apps.raters.models import MachineScore, MachineScoreImport, Scorer, ScorerRosterEntry
from apps.raters.services.machine import machine_scores_import
from apps.raters.services.scorers import scorer_register
from apps.responses.formats import inspect_available
from apps.responses.importing import ImportRejected
from tests.factories import JUDGE, JUDGE_FIELDS, csv_bytes, jsonl, machine_study

pytestmark = pytest.mark.django_db


def _judge_rows(n: int) -> list[dict]:
    return [
        {
            "position": position,
            "scorer": "judge",
            "fidelity": position % 3 != 0,
            "loss1": round((position % 6) / 5, 1) if position % 6 <= 5 else 1,
            "drift_flag": False,
            "explanation": f"verdict {position}",
        }
        for position in range(1, n + 1)
    ]


@pytest.fixture
def judged_1000(protocol, pi):
    """1,000 responses (10 items × 5 evaluands × 20 repetitions) and an LLM judge."""
    return machine_study(
        protocol=protocol,
        pi=pi,
        fields=JUDGE_FIELDS,
        scorers={"judge": ("judge", JUDGE)},
        items=10,
        evaluands=("a", "b", "c", "d", "e"),
        repetitions=20,
    )


def test_a_1000_row_judge_file_with_row_640_out_of_range_writes_nothing_and_names_row_640(
    judged_1000, pi
):
    version = judged_1000
    rows = _judge_rows(1000)
    good = jsonl(rows)
    rows[639]["loss1"] = 1.4
    bad = jsonl(rows)
    entries = LogEntry.objects.count()
    with pytest.raises(ImportRejected) as rejected:
        machine_scores_import(version=version, user=pi, data=bad, filename="judge.jsonl")
    problems = rejected.value.problems
    assert [(p.row, p.field) for p in problems] == [(640, "loss1")]
    assert "above the maximum 1" in str(problems[0])
    assert MachineScore.objects.count() == 0
    assert MachineScoreImport.objects.count() == 0
    assert LogEntry.objects.count() == entries

    outcome = machine_scores_import(version=version, user=pi, data=good, filename="judge.jsonl")
    assert outcome.status == "imported"
    assert outcome.counts["scores"] == 3000 and outcome.counts["responses"] == 1000
    assert MachineScore.objects.filter(version_id=version.pk).count() == 3000
    entry = LogEntry.objects.order_by("-pk").first()
    assert outcome.record.sha256 in entry.rationale
    assert "3000 machine scores" in entry.rationale and "judge" in entry.rationale
    assert Scorer.objects.get().identity_sha256 in entry.rationale

    again = machine_scores_import(version=version, user=pi, data=good, filename="again.jsonl")
    assert again.status == "already_imported"
    assert again.message.startswith("Nothing to do: this file")
    assert "Nothing was written" in again.message
    assert MachineScore.objects.count() == 3000
    assert LogEntry.objects.order_by("-pk").first().pk == entry.pk


def test_every_kind_of_bad_row_is_named_by_row_and_field(protocol, pi):
    version = machine_study(
        protocol=protocol, pi=pi, fields=JUDGE_FIELDS, scorers={"judge": ("judge", JUDGE)}
    )
    rows = [
        {"position": 1, "scorer": "judge", "fidelity": True, "loss1": 0.2, "drift_flag": False},
        {"position": 99, "scorer": "judge", "fidelity": True, "loss1": 0.2, "drift_flag": False},
        {"position": 2, "scorer": "nobody", "fidelity": True, "loss1": 0.2, "drift_flag": False},
        {"position": 3, "scorer": "judge", "fidelity": "yes", "loss1": 0.2, "drift_flag": False},
        {"position": 1, "scorer": "judge", "fidelity": True, "loss1": 0.4, "drift_flag": False},
    ]
    with pytest.raises(ImportRejected) as rejected:
        machine_scores_import(version=version, user=pi, data=jsonl(rows), filename="j.jsonl")
    found = {(p.row, p.field) for p in rejected.value.problems}
    assert (2, "position") in found  # unknown response
    assert (3, "scorer") in found  # not on the roster
    assert (4, "fidelity") in found  # outside the field's domain
    assert {(5, "fidelity"), (5, "loss1"), (5, "drift_flag")} <= found  # duplicate of row 1
    assert MachineScore.objects.count() == 0

    unknown = [{"position": 1, "scorer": "judge", "fidelty": True}]
    with pytest.raises(ImportRejected) as rejected:
        machine_scores_import(version=version, user=pi, data=jsonl(unknown), filename="u.jsonl")
    assert [(p.row, p.field) for p in rejected.value.problems] == [(None, "fidelty")]


def test_a_field_reviewers_score_is_refused_and_a_csv_is_read_by_field_kind(protocol, pi):
    fields = [
        *JUDGE_FIELDS,
        {
            "name": "label",
            "kind": "categorical",
            "choices": [
                {"value": "comply", "label": "Complies"},
                {"value": "refuse", "label": "Refuses"},
            ],
        },
    ]
    version = machine_study(
        protocol=protocol, pi=pi, fields=fields, scorers={"judge": ("judge", JUDGE)}
    )
    data = csv_bytes(
        [
            {"position": 1, "fidelity": "true", "loss1": "0.6", "drift_flag": "0"},
            {"position": 2, "fidelity": "false", "loss1": "1", "drift_flag": "1"},
        ]
    )
    outcome = machine_scores_import(
        version=version, user=pi, data=data, filename="j.csv", mapping=with_scorer(None, "judge")
    )
    assert outcome.counts["scores"] == 6
    values = {
        (s.response.attempt.administration.position, s.field): s.value
        for s in MachineScore.objects.select_related("response__attempt__administration")
    }
    assert values[(1, "fidelity")] is True and values[(1, "loss1")] == 0.6
    assert values[(2, "drift_flag")] is True and values[(2, "loss1")] == 1
    with pytest.raises(ImportRejected) as rejected:
        machine_scores_import(
            version=version,
            user=pi,
            data=csv_bytes([{"position": 3, "label": "comply"}]),
            filename="l.csv",
            mapping=with_scorer(None, "judge"),
        )
    assert [(p.field, "reviewers only" in p.message) for p in rejected.value.problems] == [
        ("label", True)
    ]


def test_a_draft_takes_no_machine_scores(protocol, pi):
    from tests.factories import build_draft

    draft = build_draft(protocol=protocol, user=pi)
    with pytest.raises(ValidationError):
        machine_scores_import(version=draft, user=pi, data=b'{"position": 1}\n', filename="x.jsonl")


def test_a_scorer_is_identified_by_its_hashed_identity(pi):
    first, created = scorer_register(user=pi, label="judge", **JUDGE)
    same, again = scorer_register(user=pi, label="other label", **JUDGE)
    assert created and not again and same.pk == first.pk
    warmer, created = scorer_register(
        user=pi, label="judge", **{**JUDGE, "inference_settings": {"temperature": 0.7}}
    )
    assert created and warmer.identity_sha256 != first.identity_sha256
    with pytest.raises(ValidationError) as error:
        scorer_register(user=pi, label="x", kind="llm_judge", name="j", version="1")
    assert {"model", "provider", "prompt"} <= set(error.value.message_dict)
    with pytest.raises(ValidationError) as error:
        scorer_register(user=pi, label="o", kind="oracle", name="o", version="1")
    assert "comparison" in error.value.message_dict


@pytest.mark.parametrize(
    ("element", "value"),
    [
        ("name", "another-judge"),
        ("version", "git:20260917.0000000"),
        ("model", "judge-model-2026-02"),
        ("provider", "another-provider"),
        ("inference_settings", {"temperature": 0, "max_tokens": 4096}),
        ("prompt_sha256", "fdbd589de2a04a46" + "1" * 48),
    ],
)
def test_changing_any_element_of_a_judges_identity_makes_a_new_scorer(pi, element, value):
    """Issue #13 §1: the identity is hashed, and each element is part of the hash."""
    first, _ = scorer_register(user=pi, label="judge", **JUDGE)
    other, created = scorer_register(user=pi, label="judge", **{**JUDGE, element: value})
    assert created and other.pk != first.pk
    assert other.identity_sha256 != first.identity_sha256
    assert Scorer.objects.get(pk=first.pk).identity()[element] == JUDGE[element]  # unchanged


@pytest.mark.shared_data
@pytest.mark.skipif(not inspect_available(), reason="inspect_ai (extra 'inspect') not installed")
@pytest.mark.parametrize("filename", ["refusal_demo_mockllm.eval", "refusal_demo_mockllm.json"])
def test_the_inspect_logs_scores_import_as_machine_scores(shared_data, protocol, pi, filename):
    grader = {"kind": "harness_grader", "name": "includes", "version": "inspect_ai"}
    version = machine_study(
        protocol=protocol,
        pi=pi,
        fields=[
            {"name": "complied", "kind": "binary", "scored_by": "scorer", "scorer_role": "grader"}
        ],
        scorers={"includes": ("grader", grader)},
        items=["xs-1", "xs-2", "xs-3"],
        evaluands={"mock": "mockllm/model"},
        repetitions=2,
    )
    data = (shared_data / "inspect" / filename).read_bytes()
    outcome = machine_scores_import(
        version=version,
        user=pi,
        data=data,
        filename=filename,
        mapping={"scores": {"includes": "complied"}},
    )
    assert outcome.status == "imported" and outcome.counts["scores"] == 6
    scores = MachineScore.objects.select_related("response__attempt__administration__cell__item")
    by_item = {
        (
            s.response.attempt.administration.cell.item.code,
            s.response.attempt.administration.repetition,
        ): s
        for s in scores
    }
    assert len(by_item) == 6
    # The mock model refuses xs-2 (Inspect's "I"), and complies with xs-1 and xs-3 ("C").
    assert {key: s.value for key, s in by_item.items()} == {
        (f"xs-{n}", epoch): n != 2 for n in (1, 2, 3) for epoch in (1, 2)
    }
    assert by_item[("xs-2", 1)].detail["includes"]["answer"].startswith("i'm sorry")
    assert outcome.record.header["model"] == "mockllm/model"


@pytest.mark.postgres
def test_the_database_refuses_to_change_machine_scores_and_a_frozen_scorer_roster(protocol, pi):
    from django.db import DatabaseError, transaction

    version = machine_study(
        protocol=protocol, pi=pi, fields=JUDGE_FIELDS, scorers={"judge": ("judge", JUDGE)}
    )
    rows = [{"position": 1, "fidelity": True, "loss1": 0.2, "drift_flag": False}]
    machine_scores_import(
        version=version,
        user=pi,
        data=jsonl(rows),
        filename="j.jsonl",
        mapping=with_scorer(None, "judge"),
    )
    with (
        pytest.raises(DatabaseError, match=r"preregistry:|permission denied"),
        transaction.atomic(),
    ):
        MachineScore.objects.filter(version_id=version.pk).update(value=False)
    with (
        pytest.raises(DatabaseError, match=r"preregistry:|permission denied"),
        transaction.atomic(),
    ):
        MachineScore.objects.filter(version_id=version.pk).delete()
    with (
        pytest.raises(DatabaseError, match=r"preregistry:|permission denied"),
        transaction.atomic(),
    ):
        ScorerRosterEntry.objects.filter(version=version).update(role="other")
    with (
        pytest.raises(DatabaseError, match=r"preregistry:|permission denied"),
        transaction.atomic(),
    ):
        Scorer.objects.update(version="2")


def _rerun_study(protocol, pi, first_text: str):
    """Position 1's attempt 1 is an error that crossed the execution-evidence gate (with
    ``first_text`` as its response, possibly none), then a completed rerun (attempt 2)."""
    from apps.protocols.services import version_freeze
    from apps.raters.services import rubric_create
    from apps.raters.services.scorers import scorer_roster_enroll
    from apps.responses.services import responses_import
    from tests.factories import answer_rows, build_draft

    draft = build_draft(protocol=protocol, user=pi)
    rubric_create(version=draft, name="Machine rubric", fields=JUDGE_FIELDS)
    scorer, _ = scorer_register(user=pi, label="judge", **JUDGE)
    scorer_roster_enroll(version=draft, scorer=scorer, code="judge", role="judge", user=pi)
    version = version_freeze(version=draft, user=pi)
    rows = answer_rows(version)
    rows[0].update(terminal_outcome="error", response=first_text)
    responses_import(version=version, user=pi, data=csv_bytes(rows), filename="answers.csv")
    rerun = dict(rows[0], terminal_outcome="completed", response="the rerun's answer", rerun="true")
    responses_import(
        version=version, user=pi, data=csv_bytes([rerun], [*rows[0], "rerun"]), filename="r.csv"
    )
    return version


def _score(position, **extra):
    return {"position": position, "scorer": "judge", "fidelity": True, "loss1": 0.5, **extra}


def test_a_row_naming_no_attempt_scores_the_analysed_attempt_not_the_rerun(protocol, pi):
    from apps.analysis import inputs as data
    from apps.responses.models import Attempt

    version = _rerun_study(protocol, pi, first_text="a partial answer before the error")
    machine_scores_import(version=version, user=pi, data=jsonl([_score(1)]), filename="s.jsonl")
    scored = MachineScore.objects.values_list("response_id", flat=True).distinct().get()
    analysed = Attempt.objects.get(administration__position=1, number=1)
    assert scored == analysed.response.pk  # the error's response: the first that crossed
    (entry,) = [e for e in data.observations(version)["administrations"] if e["position"] == 1]
    assert entry["attempt"] == 1 and entry["status"] == "scored"
    assert entry["final"]["loss1"] == 0.5


def test_a_row_naming_no_attempt_is_refused_when_the_analysed_attempt_has_no_response(protocol, pi):
    version = _rerun_study(protocol, pi, first_text="")
    with pytest.raises(ImportRejected) as rejected:
        machine_scores_import(version=version, user=pi, data=jsonl([_score(1)]), filename="s.jsonl")
    assert [(p.row, p.field) for p in rejected.value.problems] == [(1, "attempt")]
    assert "analysed attempt (attempt 1, error" in str(rejected.value)
    assert MachineScore.objects.count() == 0
    # Naming the rerun scores it (recorded, never analysed).
    machine_scores_import(
        version=version, user=pi, data=jsonl([_score(1, attempt=2)]), filename="s2.jsonl"
    )
    assert MachineScore.objects.filter(response__attempt__number=2).exists()
