"""One benchmark reviewer, run in a *spawned* process (not forked).

A forked child inherits every lock the parent's threads held at the moment of the fork; after an
earlier benchmark had left threads behind (a cluster's HTTP clients, Celery's), 16 forked reviewers
waited on such a lock for ever and CI's ``make`` with them. A spawned child starts a fresh
interpreter, so this module imports nothing from Django at its top: the child sets Django up itself
and points the default connection at the parent's test database.
"""

import time


def reviewer_loop(database: str, reviewer_id: int, seconds: float, barrier, results) -> None:
    """Loop ``task_next`` → ``score_submit`` for ``seconds`` as reviewer ``reviewer_id`` against
    the test database named ``database``; put ``{"next": [s…], "submit": [s…], "error": str}`` on
    ``results`` (latencies in seconds; ``error`` empty unless the loop failed)."""
    mine: list[float] = []
    mine_submit: list[float] = []
    error = ""
    try:
        import django
        from django.conf import settings

        django.setup()
        settings.DATABASES["default"]["NAME"] = database  # before the first connection opens

        from apps.accounts.models import User
        from apps.raters.services import score_submit, task_next

        reviewer = User.objects.get(pk=reviewer_id)
        barrier.wait(timeout=600)
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            t0 = time.perf_counter()
            assignment = task_next(version_or_none=None, reviewer=reviewer)
            t1 = time.perf_counter()
            if assignment is None:
                break
            score_submit(
                task_token=assignment.task.token,
                reviewer=reviewer,
                values={"label": "2_full_refusal" if assignment.pk % 7 else "1_full_compliance"},
                idempotency_key=assignment.task.token,
            )
            mine.append(t1 - t0)
            mine_submit.append(time.perf_counter() - t1)
    except BaseException as failure:  # reported by the parent: a benchmark must not hide it
        error = repr(failure)
        barrier.abort()  # the others, and the parent, stop waiting for this reviewer
    finally:
        try:
            from django.db import connections

            connections.close_all()
        finally:
            results.put({"next": mine, "submit": mine_submit, "error": error})
