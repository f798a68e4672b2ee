"""Revocation that takes effect: a reviewer who loses the role, or a version that is withdrawn,
stops scoring at once.

Two small pieces, kept apart from the queue and scoring code so that they survive its rewrites:

- ``scoring_refusal_check(reviewer=…, version_id=…)`` raises ``ScoringClosed`` when the reviewer
  no longer holds the reviewer role on the version's protocol, or the version is withdrawn (the
  read is ``apps.raters.selectors.scoring_refusal``).
  ``score_submit`` and ``score_correct`` call it once they have found (and locked) the task, and
  ``get_task_for`` calls it before a task is shown. It reads the live rows, under the reviewer's
  advisory lock in the services, so a removal that commits first is always seen.
- ``reservations_end(protocol_id=…, reviewer=…, version_id=…)`` ends the matching active
  reservations (outcome ``released``) and reopens their tasks. The protocols app calls it through
  the raters component's ``on_role_removed`` and ``on_withdraw`` hooks, in the transaction that
  removes the role or writes the withdrawal.
"""

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from apps.accounts.models import Role, User
from apps.protocols.models import ProtocolVersion
from apps.raters.models import Assignment, AssignmentOutcome, ScoringTask, TaskState
from apps.raters.selectors import scoring_refusal
from apps.raters.services.queue import lock_reviewer


class ScoringClosed(ValidationError):
    """The reviewer may no longer score this task (role removed, version withdrawn, or its
    scoring closed)."""


def scoring_refusal_check(*, reviewer: User, version_id: int) -> None:
    """Raise ``ScoringClosed`` with the reason when ``scoring_refusal`` gives one."""
    reason = scoring_refusal(reviewer=reviewer, version_id=version_id)
    if reason is not None:
        raise ScoringClosed(reason)


@transaction.atomic
def reservations_end(
    *, protocol_id: int, reviewer: User | None = None, version_id: int | None = None
) -> int:
    """End the active reservations on the protocol's tasks (only ``reviewer``'s, only
    ``version_id``'s when given): outcome ``released``, tasks back to ``open``. Returns how many
    ended.

    Locks in the queue's order: the reviewer (advisory), then the tasks by id, then the
    assignments, so it never deadlocks with a concurrent claim or submit.
    """
    if reviewer is not None:
        lock_reviewer(reviewer)
    active = Assignment.objects.filter(
        outcome=AssignmentOutcome.ACTIVE, version__protocol_id=protocol_id
    )
    if reviewer is not None:
        active = active.filter(reviewer=reviewer)
    if version_id is not None:
        active = active.filter(version_id=version_id)
    task_ids = list(
        ScoringTask.objects.filter(pk__in=active.values("task_id"))
        .order_by("pk")
        .select_for_update()
        .values_list("pk", flat=True)
    )
    if not task_ids:
        return 0
    ended = active.filter(task_id__in=task_ids).update(
        outcome=AssignmentOutcome.RELEASED, ended_at=timezone.now()
    )
    ScoringTask.objects.filter(pk__in=task_ids, state=TaskState.ASSIGNED).exclude(
        Exists(Assignment.objects.filter(task=OuterRef("pk"), outcome=AssignmentOutcome.ACTIVE))
    ).update(state=TaskState.OPEN)
    return ended


def on_role_removed(protocol_id: int, user: User, role: str) -> None:
    """The raters component's hook: a reviewer who loses the role loses their reservations."""
    if role == Role.REVIEWER:
        reservations_end(protocol_id=protocol_id, reviewer=user)


def on_withdraw(version: ProtocolVersion) -> None:
    """The raters component's hook: a withdrawn version's reservations all end."""
    reservations_end(protocol_id=version.protocol_id, version_id=version.pk)
