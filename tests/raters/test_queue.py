"""Opening scoring and the reviewer's queue: reservations, order, expiry, adjudication routing."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from apps.raters.models import Assignment, ScoringOpening, ScoringTask
from apps.raters.services import (
    assignments_expire,
    reviewer_offset,
    score_correct,
    score_submit,
    scoring_open,
    shuffle_key_for,
    task_next,
)
from apps.raters.tasks import assignments_expire_task
from apps.responses.models import Exclusion
from tests.factories import (
    MembershipFactory,
    ProtocolVersionFactory,
    ResponseFactory,
    UserFactory,
    frozen_study,
)

pytestmark = pytest.mark.django_db


def _score(assignment, reviewer, label="1_full_compliance", key=None):
    return score_submit(
        task_token=assignment.task.token,
        reviewer=reviewer,
        values={"label": label},
        idempotency_key=key or f"k-{assignment.pk}",
    )


def test_opening_scoring_creates_k_opaque_tasks_per_response_once():
    study = frozen_study(responses=5, parameters={"scores_per_response": 3})
    assert scoring_open(version=study.version, user=study.pi) == 15
    tasks = ScoringTask.objects.filter(version=study.version)
    assert tasks.count() == 15
    assert {t.slot for t in tasks} == {1, 2, 3}
    # No task has a token before it is first reserved (opening writes none, issue #20); each
    # reservation gives its task a fresh opaque one, kept if the task is reserved again.
    assert {t.token for t in tasks} == {None}
    tokens = []
    for _ in range(3):
        reviewer = UserFactory()
        MembershipFactory(user=reviewer, protocol=study.version.protocol, role="reviewer")
        assignment = task_next(reviewer=reviewer)
        assignment.task.refresh_from_db()
        tokens.append(assignment.task.token)
        assert task_next(reviewer=reviewer).task.token == assignment.task.token
    assert len(set(tokens)) == 3 and all(len(t) >= 22 for t in tokens)
    assert ScoringTask.objects.filter(version=study.version, token__isnull=False).count() == 3
    # The same seed and response give the same shuffle key; the key is shared by the slots.
    for t in tasks:
        assert t.shuffle_key == shuffle_key_for(seed=17, response_id=t.response_id)
    # A second call creates tasks only for responses that have none.
    assert scoring_open(version=study.version, user=study.pi) == 0
    assert ScoringOpening.objects.filter(version=study.version).count() == 1


def test_responses_imported_later_get_tasks_on_a_second_opening():
    study = frozen_study(responses=2)
    scoring_open(version=study.version, user=study.pi)
    administration = study.responses[0].attempt.administration
    late = ResponseFactory(
        attempt__administration=administration, attempt__number=2, version=study.version
    )
    assert scoring_open(version=study.version, user=study.pi) == 2
    assert ScoringTask.objects.filter(response=late).count() == 2


def test_excluded_responses_get_no_tasks_and_are_never_served(pi):
    study = frozen_study(responses=3)
    excluded = study.responses[0]
    Exclusion.objects.create(
        version=study.version,
        attempt=excluded.attempt,
        reason_code="off_protocol",
        rationale="test",
        decided_by=study.pi,
        outcome_visible=False,
    )
    scoring_open(version=study.version, user=study.pi)
    assert not ScoringTask.objects.filter(response=excluded).exists()
    # Excluded after opening: its tasks stay but the queue does not serve them.
    late = study.responses[1]
    Exclusion.objects.create(
        version=study.version,
        attempt=late.attempt,
        reason_code="off_protocol",
        rationale="test",
        decided_by=study.pi,
        outcome_visible=False,
    )
    served = set()
    reviewer = study.reviewers[0]
    while (a := task_next(version_or_none=None, reviewer=reviewer)) is not None:
        served.add(a.response_id)
        _score(a, reviewer)
    assert served == {study.responses[2].pk}


def test_scoring_opens_only_on_a_frozen_version_with_a_rubric(pi):
    draft = ProtocolVersionFactory()
    with pytest.raises(ValidationError, match="frozen"):
        scoring_open(version=draft, user=pi)


def test_next_returns_the_same_reservation_on_refresh():
    study = frozen_study(responses=4)
    scoring_open(version=study.version, user=study.pi)
    reviewer = study.reviewers[0]
    first = task_next(version_or_none=None, reviewer=reviewer)
    again = task_next(version_or_none=None, reviewer=reviewer)
    assert first.pk == again.pk and first.task_id == again.task_id
    assert Assignment.objects.filter(reviewer=reviewer, outcome="active").count() == 1
    first.task.refresh_from_db()
    assert first.task.state == "assigned"
    assert first.expires_at - first.reserved_at == timedelta(minutes=30)


def test_the_reservation_lasts_the_plans_minutes():
    study = frozen_study(responses=1, parameters={"reservation_minutes": 7})
    scoring_open(version=study.version, user=study.pi)
    a = task_next(version_or_none=None, reviewer=study.reviewers[0])
    assert a.expires_at - a.reserved_at == timedelta(minutes=7)


def test_a_reviewer_is_never_given_the_same_response_twice():
    study = frozen_study(responses=3, parameters={"scores_per_response": 3})
    scoring_open(version=study.version, user=study.pi)
    reviewer = study.reviewers[0]
    served = []
    while (a := task_next(version_or_none=None, reviewer=reviewer)) is not None:
        served.append(a.response_id)
        _score(a, reviewer)
    assert sorted(served) == sorted(r.pk for r in study.responses)


def test_someone_without_the_reviewer_role_gets_no_task(outsider):
    study = frozen_study(responses=2)
    scoring_open(version=study.version, user=study.pi)
    assert task_next(version_or_none=None, reviewer=outsider) is None
    assert task_next(version_or_none=None, reviewer=study.pi) is None


def test_partly_scored_responses_are_finished_first():
    study = frozen_study(responses=30)
    scoring_open(version=study.version, user=study.pi)
    first, second = study.reviewers[:2]
    scored_by_first = set()
    for _ in range(5):
        a = task_next(version_or_none=None, reviewer=first)
        scored_by_first.add(a.response_id)
        _score(a, first)
    # The second reviewer is served the five partly scored responses before any fresh one.
    for _ in range(5):
        a = task_next(version_or_none=None, reviewer=second)
        assert a.response_id in scored_by_first
        _score(a, second)
    a = task_next(version_or_none=None, reviewer=second)
    assert a.response_id not in scored_by_first


@pytest.mark.parametrize("lean_path", [True, False], ids=["lean", "orm"])
def test_partly_scored_responses_of_every_version_come_before_any_fresh_task(
    lean_path, monkeypatch
):
    # Two k = 2 studies that share a reviewer: the claim serves the partly scored responses of
    # every such version, in version order, before any fresh task of any version (lean.py's
    # _claim_sql; queue.py's _claim_in_order on the ORM path, which must decide the same).
    if not lean_path:
        monkeypatch.setattr("apps.raters.services.lean.available", lambda: False)
    older = frozen_study(responses=12)
    newer = frozen_study(responses=12)
    assert older.version.pk < newer.version.pk
    both = older.reviewers[0]
    MembershipFactory(user=both, protocol=newer.version.protocol, role="reviewer")
    for study in (older, newer):
        scoring_open(version=study.version, user=study.pi)
    # Another reviewer scores three responses of each study once (partly scored at k = 2).
    partly = {}
    for study in (older, newer):
        other = study.reviewers[1]
        scored = set()
        for _ in range(3):
            a = task_next(version_or_none=study.version, reviewer=other)
            scored.add(a.response_id)
            _score(a, other)
        partly[study.version.pk] = scored
    served = []
    for _ in range(7):
        a = task_next(version_or_none=None, reviewer=both)
        served.append((a.version_id, a.response_id))
        _score(a, both)
    versions = [v for v, _ in served]
    assert versions[:6] == [older.version.pk] * 3 + [newer.version.pk] * 3
    assert {r for _, r in served[:3]} == partly[older.version.pk]
    assert {r for _, r in served[3:6]} == partly[newer.version.pk]
    # Then fresh tasks, the older version's first.
    assert served[6][0] == older.version.pk
    assert served[6][1] not in partly[older.version.pk]


def test_each_reviewer_has_an_own_order_fixed_by_the_seed():
    study = frozen_study(responses=40, reviewers=6, parameters={"scores_per_response": 1})
    scoring_open(version=study.version, user=study.pi)

    def order_for(reviewer):
        offset = reviewer_offset(seed=17, reviewer_id=reviewer.pk)
        keys = sorted((shuffle_key_for(seed=17, response_id=r.pk), r.pk) for r in study.responses)
        return [pk for key, pk in keys if key >= offset] + [pk for key, pk in keys if key < offset]

    first = study.reviewers[0]
    expected_first = order_for(first)
    served = []
    for _ in range(10):
        a = task_next(version_or_none=None, reviewer=first)
        served.append(a.response_id)
        a.outcome = "released"  # give it back unscored so the pool stays whole
        a.ended_at = timezone.now()
        a.save()
        ScoringTask.objects.filter(pk=a.task_id).update(state="open")
    # Released (not submitted) responses may be served again; the first is the order's head.
    assert served[0] == expected_first[0]
    # Each reviewer's order is the study's shuffled order rotated to their own offset, so two
    # reviewers whose offsets fall between the same two of the 40 keys share an order (chance
    # 2/41 for two reviewers); all six alike has a chance of 6!·40/(40·41·…·45) ≈ 5·10⁻⁶.
    offsets = {reviewer_offset(seed=17, reviewer_id=r.pk) for r in study.reviewers}
    assert len(offsets) == 6
    orders = {tuple(order_for(r)) for r in study.reviewers}
    assert len(orders) > 1
    design_order = tuple(r.pk for r in study.responses)
    assert design_order not in orders


def test_an_expired_reservation_returns_to_the_pool_without_anyone_calling_next():
    study = frozen_study(responses=2)
    scoring_open(version=study.version, user=study.pi)
    a = task_next(version_or_none=None, reviewer=study.reviewers[0])
    Assignment.objects.filter(pk=a.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    # The scheduled task's body, as beat runs it: nobody asks for a next task.
    assert assignments_expire_task() == 1
    a.refresh_from_db()
    a.task.refresh_from_db()
    assert a.outcome == "expired" and a.ended_at is not None
    assert a.task.state == "open"
    assert assignments_expire_task() == 0


def test_an_unexpired_reservation_is_left_alone_by_the_sweep():
    study = frozen_study(responses=1)
    scoring_open(version=study.version, user=study.pi)
    a = task_next(version_or_none=None, reviewer=study.reviewers[0])
    assert assignments_expire() == 0
    a.refresh_from_db()
    assert a.outcome == "active"


def test_an_expired_reservation_is_also_freed_lazily_by_the_next_call():
    study = frozen_study(responses=1, parameters={"scores_per_response": 1})
    scoring_open(version=study.version, user=study.pi)
    first, second = study.reviewers[:2]
    a = task_next(version_or_none=None, reviewer=first)
    assert task_next(version_or_none=None, reviewer=second) is None
    Assignment.objects.filter(pk=a.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    b = task_next(version_or_none=None, reviewer=second)
    assert b is not None and b.task_id == a.task_id
    a.refresh_from_db()
    assert a.outcome == "expired"


def test_a_reviewer_whose_reservation_expired_may_get_the_response_again():
    study = frozen_study(responses=1, parameters={"scores_per_response": 1})
    scoring_open(version=study.version, user=study.pi)
    reviewer = study.reviewers[0]
    a = task_next(version_or_none=None, reviewer=reviewer)
    Assignment.objects.filter(pk=a.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    b = task_next(version_or_none=None, reviewer=reviewer)
    assert b.pk != a.pk and b.task_id == a.task_id


def test_disagreement_routes_an_adjudication_task_to_a_reviewer_who_scored_neither():
    study = frozen_study(responses=1)
    scoring_open(version=study.version, user=study.pi)
    first, second, third = study.reviewers
    _score(task_next(version_or_none=None, reviewer=first), first, "1_full_compliance")
    _score(task_next(version_or_none=None, reviewer=second), second, "2_full_refusal")
    adjudication = ScoringTask.objects.get(kind="adjudication")
    assert adjudication.state == "open"
    # Neither original reviewer is served it.
    assert task_next(version_or_none=None, reviewer=first) is None
    assert task_next(version_or_none=None, reviewer=second) is None
    a = task_next(version_or_none=None, reviewer=third)
    assert a.task_id == adjudication.pk


def test_agreement_creates_no_adjudication_task():
    study = frozen_study(responses=1)
    scoring_open(version=study.version, user=study.pi)
    first, second, _ = study.reviewers
    _score(task_next(version_or_none=None, reviewer=first), first, "2_full_refusal")
    _score(task_next(version_or_none=None, reviewer=second), second, "2_full_refusal")
    assert not ScoringTask.objects.filter(kind="adjudication").exists()


@pytest.mark.parametrize(
    ("first_label", "corrected_to", "adjudicated"),
    [("1_full_compliance", "2_full_refusal", False), ("2_full_refusal", "1_full_compliance", True)],
)
def test_the_kth_score_is_compared_with_the_corrected_primary(
    first_label, corrected_to, adjudicated
):
    # The rule reads each primary score as it now stands (its latest correction), on the path
    # the k-th score takes (lean.primary_values on PostgreSQL), not the value first submitted.
    study = frozen_study(responses=1)
    scoring_open(version=study.version, user=study.pi)
    first, second, _ = study.reviewers
    score = _score(task_next(version_or_none=None, reviewer=first), first, first_label)
    score_correct(score=score, reviewer=first, values={"label": corrected_to}, reason="re-read")
    assert not ScoringTask.objects.filter(kind="adjudication").exists()
    _score(task_next(version_or_none=None, reviewer=second), second, "2_full_refusal")
    assert ScoringTask.objects.filter(kind="adjudication").exists() is adjudicated


def test_opb_rule_adjudicates_on_refusal_or_f_att_beyond_delta():
    study = frozen_study(
        responses=3, template="opb", units=4, parameters={"adjudication_delta": "0.3"}
    )
    scoring_open(version=study.version, user=study.pi)
    first, second, _ = study.reviewers
    base = {"hedge_count": 0, "deflection": False, "scope_reduction": False}
    answers = {
        # within δ: F_att 0 vs 0.25 → agree
        study.responses[0].pk: ([1, 2, 3, 4], [1, 2, 3], False, False),
        # beyond δ: F_att 0 vs 0.5 → adjudicate
        study.responses[1].pk: ([1, 2, 3, 4], [1, 2], False, False),
        # refusal differs → adjudicate
        study.responses[2].pk: ([1, 2, 3, 4], [1, 2, 3, 4], False, True),
    }
    for reviewer, index in ((first, 0), (second, 1)):
        while (a := task_next(version_or_none=None, reviewer=reviewer)) is not None:
            units_1, units_2, r1, r2 = answers[a.response_id]
            values = base | {
                "units_supplied": (units_1, units_2)[index],
                "refusal": (r1, r2)[index],
            }
            score_submit(
                task_token=a.task.token,
                reviewer=reviewer,
                values=values,
                idempotency_key=a.task.token,
            )
    adjudicated = set(
        ScoringTask.objects.filter(kind="adjudication").values_list("response_id", flat=True)
    )
    assert adjudicated == {study.responses[1].pk, study.responses[2].pk}


def test_the_queue_draws_from_every_version_the_reviewer_reviews_and_only_those():
    one = frozen_study(responses=1, parameters={"scores_per_response": 1})
    two = frozen_study(responses=1, parameters={"scores_per_response": 1})
    scoring_open(version=one.version, user=one.pi)
    scoring_open(version=two.version, user=two.pi)
    reviewer = UserFactory()
    MembershipFactory(user=reviewer, protocol=one.version.protocol, role="reviewer")
    MembershipFactory(user=reviewer, protocol=two.version.protocol, role="reviewer")
    versions = set()
    while (a := task_next(version_or_none=None, reviewer=reviewer)) is not None:
        versions.add(a.version_id)
        _score(a, reviewer)
    assert versions == {one.version.pk, two.version.pk}
    # A reviewer of the first only never sees the second's tasks.
    only_one = one.reviewers[0]
    assert task_next(version_or_none=two.version, reviewer=only_one) is None
