"""Parallel writers on PostgreSQL produce one unbroken chain: no fork, no gap, no lost entry."""

import itertools
import threading
from collections import Counter

import pytest
from django.db import connection, transaction

from apps.deviations.chain import GENESIS_HASH
from apps.deviations.models import LogEntry
from apps.deviations.selectors import chain_verify
from apps.deviations.services import deviation_append
from tests.factories import UserFactory

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

WRITERS = 8
APPENDS_EACH = 25


def test_eight_parallel_writers_produce_one_unbroken_chain(protocol):
    writers = [UserFactory(username=f"writer{n}") for n in range(WRITERS)]
    start = threading.Barrier(WRITERS)
    backends, errors = set(), []

    def write(user):
        try:
            with connection.cursor() as cursor:  # this thread's own connection
                cursor.execute("SELECT pg_backend_pid()")
                backends.add(cursor.fetchone()[0])
            start.wait(timeout=30)
            for n in range(APPENDS_EACH):
                with transaction.atomic():
                    deviation_append(
                        protocol=protocol,
                        kind="deviation",
                        rationale=f"{user.username} entry {n}",
                        actor=user,
                        refs=[{"type": "writer", "id": user.pk, "label": user.username}],
                    )
        except Exception as error:  # reported below; a thread's exception is otherwise lost
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(user,)) for user in writers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert errors == []
    assert len(backends) == WRITERS  # eight connections really wrote at once
    entries = list(LogEntry.objects.filter(protocol=protocol).order_by("seq"))
    total = WRITERS * APPENDS_EACH
    assert [e.seq for e in entries] == list(range(1, total + 1))  # no gap, nothing lost
    assert Counter(e.actor_name for e in entries) == {u.username: APPENDS_EACH for u in writers}
    prev_hashes = [e.prev_hash for e in entries]
    assert len(set(prev_hashes)) == total  # no two entries claim the same predecessor: no fork
    assert prev_hashes[0] == GENESIS_HASH
    assert [e.recorded_at for e in entries] == sorted(e.recorded_at for e in entries)
    # The writers really interleaved (otherwise this would test nothing about concurrency).
    switches = sum(a.actor_id != b.actor_id for a, b in itertools.pairwise(entries))
    assert switches >= WRITERS
    report = chain_verify(protocol=protocol)
    assert report.ok, report.summary()
    assert report.verified_through == total
