"""A repeated score POST answers with the stored score: only the first one creates it.

Kept apart from ``score_submit`` so that the queue's rewrites of the submit path leave it alone:
it needs only ``score_submit``'s contract (a repeat of an idempotency key returns the stored
score) and ``lock_reviewer`` (a per-reviewer lock held to the end of the transaction).
"""

from django.db import transaction

from apps.accounts.models import User
from apps.raters.models import Score
from apps.raters.services.queue import lock_reviewer
from apps.raters.services.scoring import score_submit


@transaction.atomic
def score_submit_once(
    *,
    task_token: str,
    reviewer: User,
    values: dict[str, object],
    idempotency_key: str,
    seconds_spent: int | None = None,
) -> tuple[Score, bool]:
    """``score_submit``, also saying whether this call stored the score: ``(score, created)``.

    The reviewer's lock is taken before the idempotency key is looked up, so of any number of
    identical submits racing each other exactly one sees no stored score and creates it
    (``created`` True); every other one waits for it and gets it back (``created`` False). The
    lock is PostgreSQL's advisory lock; on SQLite writers are serialised by the database.
    Raises what ``score_submit`` raises.
    """
    lock_reviewer(reviewer)
    stored = Score.objects.filter(idempotency_key=idempotency_key, reviewer=reviewer).exists()
    score = score_submit(
        task_token=task_token,
        reviewer=reviewer,
        values=values,
        idempotency_key=idempotency_key,
        seconds_spent=seconds_spent,
    )
    return score, not stored
