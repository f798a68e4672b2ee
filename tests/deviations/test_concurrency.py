"""Parallel writers on PostgreSQL produce one unbroken chain: no fork, no gap, no lost entry; and
one protocol's appends never wait for another's (issue #38 point 3)."""

import itertools
import threading
from collections import Counter

import pytest
from django.db import connection, transaction

from apps.deviations.chain import GENESIS_HASH
from apps.deviations.models import LogEntry
from apps.deviations.selectors import chain_verify
from apps.deviations.services import NewEntry, deviation_append, deviation_append_many
from tests.factories import ProtocolFactory, UserFactory

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

WRITERS = 16
APPENDS_EACH = 12
BATCH = 3  # the odd-numbered writers append batches of 3 (deviation_append_many)


def test_sixteen_parallel_writers_single_and_batched_produce_one_unbroken_chain(protocol):
    writers = [UserFactory(username=f"writer{n}") for n in range(WRITERS)]
    start = threading.Barrier(WRITERS)
    backends, errors = set(), []

    def write(user):
        try:
            with connection.cursor() as cursor:  # this thread's own connection
                cursor.execute("SELECT pg_backend_pid()")
                backends.add(cursor.fetchone()[0])
            start.wait(timeout=30)
            refs = [{"type": "writer", "id": user.pk, "label": user.username}]
            batched = int(user.username.removeprefix("writer")) % 2
            for n in range(0, APPENDS_EACH, BATCH if batched else 1):
                with transaction.atomic():
                    if batched:
                        deviation_append_many(
                            protocol=protocol,
                            entries=[
                                NewEntry("deviation", f"{user.username} entry {m}", user, refs)
                                for m in range(n, n + BATCH)
                            ],
                        )
                    else:
                        deviation_append(
                            protocol=protocol,
                            kind="deviation",
                            rationale=f"{user.username} entry {n}",
                            actor=user,
                            refs=refs,
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
    assert len(backends) == WRITERS  # sixteen connections really wrote at once
    entries = list(LogEntry.objects.filter(protocol=protocol).order_by("seq"))
    total = WRITERS * APPENDS_EACH
    assert [e.seq for e in entries] == list(range(1, total + 1))  # no gap, nothing lost
    assert Counter(e.actor_name for e in entries) == {u.username: APPENDS_EACH for u in writers}
    prev_hashes = [e.prev_hash for e in entries]
    assert len(set(prev_hashes)) == total  # no two entries claim the same predecessor: no fork
    assert prev_hashes[0] == GENESIS_HASH
    assert [e.recorded_at for e in entries] == sorted(e.recorded_at for e in entries)
    for user in writers:  # each writer's entries in its own order (a batch's in the batch's)
        own = [e.rationale for e in entries if e.actor_id == user.pk]
        assert own == [f"{user.username} entry {m}" for m in range(APPENDS_EACH)]
    # The writers really interleaved (otherwise this would test nothing about concurrency).
    switches = sum(a.actor_id != b.actor_id for a, b in itertools.pairwise(entries))
    assert switches >= WRITERS
    report = chain_verify(protocol=protocol)
    assert report.ok, report.summary()
    assert report.verified_through == total


def test_a_protocol_whose_log_lock_is_held_does_not_block_another_protocols_appends(protocol, pi):
    """One writer holds protocol A's log lock (its transaction has appended and not ended); a
    second connection appends to protocol B at once, and an append to A from it that must be
    chained at once waits (shown by a lock timeout), so the lock really was held while B's
    append went through. (A plain append to A would be staged: test_sequencer.py.)"""
    other = ProtocolFactory()
    holding, release, errors = threading.Event(), threading.Event(), []

    def hold_a():
        try:
            with transaction.atomic():
                deviation_append(protocol=protocol, kind="deviation", rationale="holds A", actor=pi)
                holding.set()
                release.wait(timeout=30)
        except Exception as error:
            errors.append(error)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_a)
    holder.start()
    try:
        assert holding.wait(timeout=30)
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '2s'")
            appended = deviation_append_many(
                protocol=other,
                entries=[NewEntry("deviation", f"B {n}", pi) for n in range(1, 4)],
            )
        assert [e["seq"] for e in appended] == [1, 2, 3]
        with pytest.raises(Exception, match="lock timeout"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '200ms'")
            deviation_append(
                protocol=protocol, kind="deviation", rationale="waits", actor=pi, chained=True
            )
    finally:
        release.set()
        holder.join(timeout=30)
    assert errors == []
    assert list(LogEntry.objects.filter(protocol=protocol).values_list("rationale", flat=True)) == [
        "holds A"
    ]
    assert chain_verify(protocol=other).verified_through == 3
