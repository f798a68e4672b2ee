"""The demo's reviewers at work: part of the demo's responses scored through the real queue.

Two demo reviewers take turns asking ``task_next`` for their next task and answering it with
``score_submit``. The queue serves partly scored responses first, so each response reviewer1
opens is finished by reviewer2 at the next turn: the scored part is a set of fully scored
responses chosen by the queue's own order, and the rest stays open in both queues.

A reviewer's values are read off the synthetic response (``apps.demo.responses``): the key units
it lists, whether it declines, its hedges, deflection and scope reduction. A reviewer misreads
now and then (a fixed, seeded rate per reviewer), so some scores disagree and the plan's rule
sends those responses to adjudication by a reviewer who scored neither (reviewer3 in the demo).
"""

import random

from django.db import transaction

from apps.accounts.models import User
from apps.demo.responses import (
    DEFLECTION,
    DEMO_RESPONSES_SEED,
    HEDGES,
    REFUSAL_OPENINGS,
    REFUSAL_TEXT,
    SCOPE_REDUCTION,
)
from apps.items.models import KeyUnit
from apps.protocols.models import ProtocolVersion
from apps.raters.models import Score
from apps.raters.services import score_submit, task_next

# How many responses the demo's reviewers score in full (two primary scores each).
DEMO_SCORED_RESPONSES = 520
# Per reviewer: the chance of missing one supplied unit, of miscounting hedges, of misreading R.
_MISREAD = {"reviewer1": (0.04, 0.03, 0.01), "reviewer2": (0.08, 0.05, 0.02)}


def demo_values_for(*, text: str, units: list[str], position: int, reviewer: str) -> dict:
    """The values ``reviewer`` gives a synthetic response (valid for the ``opb`` rubric)."""
    lines = text.splitlines()
    supplied = [n for n, unit in enumerate(units, start=1) if f"- {unit}" in lines]
    refusal = text == REFUSAL_TEXT or (bool(lines) and lines[0] in REFUSAL_OPENINGS)
    hedges = sum(line in HEDGES for line in lines)
    miss_unit, miss_hedge, miss_refusal = _MISREAD[reviewer]
    rng = random.Random(f"{DEMO_RESPONSES_SEED}:score:{reviewer}:{position}")
    if supplied and rng.random() < miss_unit:
        supplied.remove(rng.choice(supplied))
    if rng.random() < miss_hedge:
        hedges += 1
    if rng.random() < miss_refusal:
        refusal = not refusal
    return {
        "units_supplied": supplied,
        "refusal": refusal,
        "hedge_count": hedges,
        "deflection": DEFLECTION in lines,
        "scope_reduction": SCOPE_REDUCTION in lines,
    }


def _score_one(*, version: ProtocolVersion, reviewer: User) -> bool:
    assignment = task_next(version_or_none=version, reviewer=reviewer)
    if assignment is None:
        return False
    task = assignment.task
    response = task.response
    administration = response.attempt.administration
    units = list(
        KeyUnit.objects.filter(cell_id=administration.cell_id)
        .order_by("position")
        .values_list("text", flat=True)
    )
    values = demo_values_for(
        text=response.text,
        units=units,
        position=administration.position,
        reviewer=reviewer.username,
    )
    score_submit(
        task_token=task.reserved_token,
        reviewer=reviewer,
        values=values,
        idempotency_key=f"demo-{version.pk}-{task.pk}-{reviewer.username}",
        seconds_spent=30 + administration.position % 90,
    )
    return True


@transaction.atomic
def demo_scores_submit(
    *,
    version: ProtocolVersion,
    reviewers: tuple[User, User],
    responses: int = DEMO_SCORED_RESPONSES,
) -> int:
    """Score ``responses`` responses of ``version`` in full through the queue, unless the demo
    reviewers have scored it already. Returns the number of scores submitted."""
    if Score.objects.filter(version=version, reviewer__in=reviewers).exists():
        return 0
    submitted = 0
    for _ in range(responses):
        for reviewer in reviewers:
            if not _score_one(version=version, reviewer=reviewer):
                return submitted
            submitted += 1
    return submitted
