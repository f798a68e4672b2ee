"""Submitting scores: validation, idempotency, corrections, expired reservations."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import DatabaseError, transaction
from django.utils import timezone

from apps.core.errors import NotFound
from apps.deviations.models import LogEntry
from apps.raters.models import Assignment, Score, ScoringTask
from apps.raters.selectors import final_scores
from apps.raters.services import score_correct, score_submit, scoring_open, task_next
from tests.factories import frozen_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def opb():
    study = frozen_study(responses=2, template="opb", units=4, texts=["one two three four"] * 2)
    scoring_open(version=study.version, user=study.pi)
    return study


OPB_VALUES = {
    "units_supplied": [1, 3],
    "refusal": False,
    "hedge_count": 2,
    "deflection": False,
    "scope_reduction": True,
}


def test_a_score_stores_typed_and_derived_values(opb):
    reviewer = opb.reviewers[0]
    a = task_next(version_or_none=None, reviewer=reviewer)
    score = score_submit(
        task_token=a.task.token,
        reviewer=reviewer,
        values=OPB_VALUES,
        idempotency_key="key-1",
        seconds_spent=42,
    )
    assert score.values["units_supplied"] == [1, 3]
    assert score.values["f_att"] == 0.5  # 1 − 2/4
    assert score.values["a_att"] == pytest.approx(1 - 1 / 3, abs=1e-6)  # units 2–4 executable
    assert score.values["hedge_density"] == 50.0  # 2 hedges in 4 words, per 100 words
    assert score.seconds_spent == 42
    a.refresh_from_db()
    a.task.refresh_from_db()
    assert a.outcome == "submitted" and a.ended_at is not None
    assert a.task.state == "done"


@pytest.mark.parametrize(
    ("values", "field", "message"),
    [
        (OPB_VALUES | {"refusal": "no"}, "refusal", "true or false"),
        (OPB_VALUES | {"hedge_count": -1}, "hedge_count", "0 or more"),
        (OPB_VALUES | {"units_supplied": [9]}, "units_supplied", "no unit at position"),
        ({k: v for k, v in OPB_VALUES.items() if k != "refusal"}, "refusal", "required"),
        (OPB_VALUES | {"f_att": 0.1}, "f_att", "derived"),
        (OPB_VALUES | {"colour": "red"}, "colour", "no such field"),
    ],
)
def test_invalid_values_are_refused_naming_the_field(opb, values, field, message):
    reviewer = opb.reviewers[0]
    a = task_next(version_or_none=None, reviewer=reviewer)
    with pytest.raises(ValidationError) as error:
        score_submit(task_token=a.task.token, reviewer=reviewer, values=values, idempotency_key="k")
    assert field in error.value.message_dict
    assert message in " ".join(error.value.message_dict[field])
    assert not Score.objects.exists()


def test_a_double_submit_stores_one_score(opb):
    reviewer = opb.reviewers[0]
    a = task_next(version_or_none=None, reviewer=reviewer)
    first = score_submit(
        task_token=a.task.token, reviewer=reviewer, values=OPB_VALUES, idempotency_key="same"
    )
    second = score_submit(
        task_token=a.task.token, reviewer=reviewer, values=OPB_VALUES, idempotency_key="same"
    )
    assert first.pk == second.pk
    assert Score.objects.count() == 1


def test_a_second_submit_with_a_new_key_is_refused(opb):
    reviewer = opb.reviewers[0]
    a = task_next(version_or_none=None, reviewer=reviewer)
    score_submit(task_token=a.task.token, reviewer=reviewer, values=OPB_VALUES, idempotency_key="1")
    with pytest.raises(ValidationError, match="already scored"):
        score_submit(
            task_token=a.task.token, reviewer=reviewer, values=OPB_VALUES, idempotency_key="2"
        )
    assert Score.objects.count() == 1


def test_anothers_idempotency_key_does_not_hand_back_their_score(opb):
    first, second = opb.reviewers[:2]
    a = task_next(version_or_none=None, reviewer=first)
    score_submit(task_token=a.task.token, reviewer=first, values=OPB_VALUES, idempotency_key="k")
    b = task_next(version_or_none=None, reviewer=second)
    with pytest.raises(ValidationError) as error:
        score_submit(task_token=b.task.token, reviewer=second, values={}, idempotency_key="k")
    assert "another submission" in str(error.value)
    assert "units_supplied" not in str(error.value)


def test_a_task_the_reviewer_does_not_hold_is_not_found(opb):
    first, second = opb.reviewers[:2]
    a = task_next(version_or_none=None, reviewer=first)
    for token in (a.task.token, "not-a-token"):
        with pytest.raises(NotFound, match="No such task"):
            score_submit(task_token=token, reviewer=second, values=OPB_VALUES, idempotency_key="x")


def test_a_late_submit_is_kept_when_nobody_took_the_task_meanwhile(opb):
    reviewer = opb.reviewers[0]
    a = task_next(version_or_none=None, reviewer=reviewer)
    Assignment.objects.filter(pk=a.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    from apps.raters.services import assignments_expire

    assert assignments_expire() == 1
    score = score_submit(
        task_token=a.task.token, reviewer=reviewer, values=OPB_VALUES, idempotency_key="late"
    )
    assert score.task_id == a.task_id
    assert ScoringTask.objects.get(pk=a.task_id).state == "done"


def test_a_late_submit_is_refused_when_another_reviewer_holds_the_task(opb):
    first, second = opb.reviewers[:2]
    study_tasks = ScoringTask.objects.filter(response=opb.responses[0])
    ScoringTask.objects.exclude(pk__in=study_tasks[:1]).update(state="done")  # one task in play
    a = task_next(version_or_none=None, reviewer=first)
    Assignment.objects.filter(pk=a.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    b = task_next(version_or_none=None, reviewer=second)
    assert b.task_id == a.task_id
    with pytest.raises(ValidationError, match="expired"):
        score_submit(
            task_token=a.task.token, reviewer=first, values=OPB_VALUES, idempotency_key="late"
        )
    assert not Score.objects.exists()


def test_a_correction_is_a_new_record_with_a_reason_and_a_log_entry(opb):
    reviewer = opb.reviewers[0]
    a = task_next(version_or_none=None, reviewer=reviewer)
    original = score_submit(
        task_token=a.task.token, reviewer=reviewer, values=OPB_VALUES, idempotency_key="o"
    )
    with pytest.raises(ValidationError, match="reason"):
        score_correct(score=original, reviewer=reviewer, values=OPB_VALUES, reason=" ")
    corrected = score_correct(
        score=original,
        reviewer=reviewer,
        values=OPB_VALUES | {"refusal": True},
        reason="Misread the closing paragraph.",
    )
    original.refresh_from_db()
    assert original.values["refusal"] is False  # kept as submitted
    assert corrected.corrects_id == original.pk and corrected.values["refusal"] is True
    entry = LogEntry.objects.get(kind="score_correction")
    assert entry.rationale == "Misread the closing paragraph."
    assert {"type": "score", "id": original.pk, "label": f"score {original.pk}"} in entry.refs
    # Only the corrected value counts from now on.
    with pytest.raises(ValidationError, match="corrected already"):
        score_correct(score=original, reviewer=reviewer, values=OPB_VALUES, reason="again")


def test_only_its_reviewer_corrects_a_score(opb):
    first, second = opb.reviewers[:2]
    a = task_next(version_or_none=None, reviewer=first)
    score = score_submit(
        task_token=a.task.token, reviewer=first, values=OPB_VALUES, idempotency_key="o"
    )
    with pytest.raises(NotFound):
        score_correct(score=score, reviewer=second, values=OPB_VALUES, reason="mine now")


def test_a_correction_that_creates_a_disagreement_creates_an_adjudication():
    study = frozen_study(responses=1)
    scoring_open(version=study.version, user=study.pi)
    first, second, _ = study.reviewers
    scores = []
    for reviewer in (first, second):
        a = task_next(version_or_none=None, reviewer=reviewer)
        scores.append(
            score_submit(
                task_token=a.task.token,
                reviewer=reviewer,
                values={"label": "2_full_refusal"},
                idempotency_key=a.task.token,
            )
        )
    assert not ScoringTask.objects.filter(kind="adjudication").exists()
    score_correct(
        score=scores[0], reviewer=first, values={"label": "3_partial_refusal"}, reason="re-read"
    )
    assert ScoringTask.objects.filter(kind="adjudication").count() == 1


def test_correcting_a_score_that_still_disagrees_keeps_the_one_adjudication():
    """A correction on a response already routed to adjudication (the primaries disagree before
    and after) adds no second adjudication task (it was an IntegrityError: a server error)."""
    study = frozen_study(responses=1)
    scoring_open(version=study.version, user=study.pi)
    first, second, _ = study.reviewers
    scores = []
    for reviewer, label in ((first, "2_full_refusal"), (second, "1_full_compliance")):
        a = task_next(version_or_none=None, reviewer=reviewer)
        scores.append(
            score_submit(
                task_token=a.task.token,
                reviewer=reviewer,
                values={"label": label},
                idempotency_key=a.task.token,
            )
        )
    assert ScoringTask.objects.filter(kind="adjudication").count() == 1
    score_correct(
        score=scores[0], reviewer=first, values={"label": "3_partial_refusal"}, reason="re-read"
    )
    assert ScoringTask.objects.filter(kind="adjudication").count() == 1


def test_final_scores_keep_the_adjudicated_value_beside_the_originals():
    study = frozen_study(responses=2)
    scoring_open(version=study.version, user=study.pi)
    first, second, third = study.reviewers
    labels = {
        first.pk: {
            study.responses[0].pk: "1_full_compliance",
            study.responses[1].pk: "2_full_refusal",
        },
        second.pk: {
            study.responses[0].pk: "2_full_refusal",
            study.responses[1].pk: "2_full_refusal",
        },
        third.pk: {study.responses[0].pk: "3_partial_refusal"},
    }
    for reviewer in (first, second, third):
        while (a := task_next(version_or_none=None, reviewer=reviewer)) is not None:
            score_submit(
                task_token=a.task.token,
                reviewer=reviewer,
                values={"label": labels[reviewer.pk][a.response_id]},
                idempotency_key=a.task.token,
            )
    rows = {row["response_id"]: row for row in final_scores(study.version)}
    disputed = rows[study.responses[0].pk]
    assert disputed["status"] == "adjudicated"
    assert sorted(o["values"]["label"] for o in disputed["originals"]) == [
        "1_full_compliance",
        "2_full_refusal",
    ]
    assert disputed["adjudication"] == {"label": "3_partial_refusal"}
    assert disputed["final"] == {"label": "3_partial_refusal"}
    agreed = rows[study.responses[1].pk]
    assert agreed["status"] == "agreed" and agreed["final"] == {"label": "2_full_refusal"}


@pytest.mark.postgres
def test_the_database_refuses_to_change_a_submitted_score(opb):
    reviewer = opb.reviewers[0]
    a = task_next(version_or_none=None, reviewer=reviewer)
    score = score_submit(
        task_token=a.task.token, reviewer=reviewer, values=OPB_VALUES, idempotency_key="o"
    )
    with pytest.raises(DatabaseError, match=r"append-only|permission denied"), transaction.atomic():
        Score.objects.filter(pk=score.pk).update(values={"refusal": True})
    with pytest.raises(DatabaseError, match=r"append-only|permission denied"), transaction.atomic():
        Score.objects.filter(pk=score.pk).delete()
