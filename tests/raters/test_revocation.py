"""Revocation takes effect at once, and roles are blind by construction (issue #18, "Why" 3).

- a reviewer removed while holding a reservation can neither read the task nor submit a score;
  the reservation ends and the task goes back to the pool;
- a score submitted after the version is withdrawn is refused;
- every grant and removal of a role, a change of PI included, is in the deviation log with who
  and why;
- nobody is both a reviewer and a PI, editor or auditor on one protocol, and the refusal says why.
"""

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from apps.accounts.models import Membership, Role
from apps.accounts.services import membership_grant
from apps.deviations.models import LogEntry
from apps.protocols.services import protocol_member_add, protocol_member_remove, version_withdraw
from apps.raters.models import Assignment, Score
from apps.raters.selectors import ROLE_REMOVED, VERSION_WITHDRAWN
from apps.raters.services import score_submit, scoring_open, task_next
from apps.raters.services.revocation import ScoringClosed
from tests.factories import UserFactory, frozen_study

pytestmark = pytest.mark.django_db

VALUES = {"label": "1_full_compliance"}


@pytest.fixture
def study():
    study = frozen_study(responses=3, template="xstest", reviewers=2)
    scoring_open(version=study.version, user=study.pi)
    return study


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _valid_values(study) -> dict:
    from apps.raters.models import RubricField

    field = RubricField.objects.filter(version=study.version, derivation="").first()
    if field.kind in ("categorical", "ordinal"):
        return {field.name: field.choices[0]["value"]}
    return {field.name: True}


def _remove(study, user, role=Role.REVIEWER, reason="left the study"):
    membership = Membership.objects.get(user=user, protocol=study.version.protocol, role=role)
    protocol_member_remove(membership=membership, actor=study.pi, reason=reason)


def test_a_removed_reviewer_cannot_read_the_task_they_held(study):
    reviewer = study.reviewers[0]
    held = task_next(version_or_none=None, reviewer=reviewer)
    client = _client(reviewer)
    assert client.get(f"/api/v1/tasks/{held.task.token}").status_code == 200
    _remove(study, reviewer)
    api = client.get(f"/api/v1/tasks/{held.task.token}")
    assert api.status_code == 403
    assert api.json()["detail"] == ROLE_REMOVED
    page = client.get(f"/tasks/{held.task.token}/")
    assert page.status_code == 403
    assert "no longer a reviewer" in page.content.decode()


def test_a_removed_reviewers_pending_score_is_refused_and_the_task_returns_to_the_pool(study):
    reviewer = study.reviewers[0]
    held = task_next(version_or_none=None, reviewer=reviewer)
    _remove(study, reviewer)
    held.refresh_from_db()
    held.task.refresh_from_db()
    assert held.outcome == "released" and held.ended_at is not None
    assert held.task.state == "open"
    response = _client(reviewer).post(
        f"/api/v1/tasks/{held.task.token}/score",
        {"values": _valid_values(study), "idempotency_key": "k1"},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert ROLE_REMOVED in str(response.json())
    with pytest.raises(ScoringClosed, match="no longer a reviewer"):
        score_submit(
            task_token=held.task.token,
            reviewer=reviewer,
            values=_valid_values(study),
            idempotency_key="k2",
        )
    assert not Score.objects.exists()
    # The task is served to someone else.
    other = task_next(version_or_none=None, reviewer=study.reviewers[1])
    assert other is not None


def test_a_score_after_the_version_is_withdrawn_is_refused(study):
    reviewer = study.reviewers[0]
    held = task_next(version_or_none=None, reviewer=reviewer)
    version_withdraw(version=study.version, user=study.pi, reason="the key was wrong")
    assert Assignment.objects.get(pk=held.pk).outcome == "released"
    with pytest.raises(ScoringClosed) as refused:
        score_submit(
            task_token=held.task.token,
            reviewer=reviewer,
            values=_valid_values(study),
            idempotency_key="k1",
        )
    assert refused.value.messages == [VERSION_WITHDRAWN]
    response = _client(reviewer).post(
        f"/api/v1/tasks/{held.task.token}/score",
        {"values": _valid_values(study), "idempotency_key": "k2"},
        content_type="application/json",
    )
    assert response.status_code in (400, 403)
    assert not Score.objects.exists()
    assert task_next(version_or_none=None, reviewer=study.reviewers[1]) is None


def test_grants_and_removals_are_logged_with_who_and_why(study):
    protocol = study.version.protocol
    newcomer = UserFactory()
    protocol_member_add(
        protocol=protocol,
        username=newcomer.username,
        role=Role.PI,
        actor=study.pi,
        reason="takes over as PI",
    )
    old_pi = Membership.objects.get(user=study.pi, protocol=protocol, role=Role.PI)
    protocol_member_remove(membership=old_pi, actor=study.pi, reason="moved to another lab")
    entries = list(LogEntry.objects.filter(protocol=protocol, kind="membership").order_by("seq"))
    assert [e.rationale for e in entries] == [
        f"Granted PI to {newcomer.username}: takes over as PI",
        f"Removed {study.pi.username} as PI: moved to another lab",
    ]
    assert {e.actor_name for e in entries} == {study.pi.username}
    assert entries[0].refs[0]["type"] == "membership"


def test_a_removal_without_a_reason_is_refused(study):
    membership = Membership.objects.get(user=study.reviewers[0], role=Role.REVIEWER)
    with pytest.raises(ValidationError) as refused:
        protocol_member_remove(membership=membership, actor=study.pi, reason="  ")
    assert "reason" in refused.value.message_dict
    assert Membership.objects.filter(pk=membership.pk).exists()


def test_the_members_api_removes_with_a_reason_and_logs_it(study):
    reviewer = study.reviewers[0]
    url = f"/api/v1/protocols/{study.version.protocol.code}/members/remove"
    client = _client(study.pi)
    missing = client.post(
        url, {"username": reviewer.username, "role": "reviewer"}, content_type="application/json"
    )
    assert missing.status_code == 400 and "reason" in missing.json()
    done = client.post(
        url,
        {"username": reviewer.username, "role": "reviewer", "reason": "conflict of interest"},
        content_type="application/json",
    )
    assert done.status_code == 204
    assert LogEntry.objects.filter(
        kind="membership", rationale__endswith="conflict of interest"
    ).exists()


def test_a_pi_cannot_make_themselves_a_reviewer_of_their_own_protocol(study):
    protocol = study.version.protocol
    with pytest.raises(ValidationError) as refused:
        protocol_member_add(
            protocol=protocol, username=study.pi.username, role=Role.REVIEWER, actor=study.pi
        )
    assert "scores blind" in refused.value.message_dict["role"][0]
    response = _client(study.pi).post(
        f"/api/v1/protocols/{protocol.code}/members",
        {"username": study.pi.username, "role": "reviewer"},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "scores blind" in response.json()["role"][0]
    assert not Membership.objects.filter(user=study.pi, role=Role.REVIEWER).exists()
    # … and they are never served a task.
    assert task_next(version_or_none=None, reviewer=study.pi) is None


@pytest.mark.parametrize("role", [Role.PI, Role.EDITOR, Role.AUDITOR])
def test_a_reviewer_cannot_also_be_given_a_sighted_role(study, role):
    reviewer = study.reviewers[0]
    with pytest.raises(ValidationError) as refused:
        membership_grant(user=reviewer, protocol_id=study.version.protocol_id, role=role)
    assert "would unblind their scoring" in refused.value.message_dict["role"][0]


def test_the_admin_path_is_refused_too(study):
    membership = Membership(user=study.pi, protocol=study.version.protocol, role=Role.REVIEWER)
    with pytest.raises(ValidationError, match="scores blind"):
        membership.full_clean()
