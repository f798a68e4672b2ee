"""Appends under contention (issue 38 point 3): an entry whose protocol's log lock is held by
another transaction is staged in the caller's transaction and chained after it commits, in one
unbroken chain; a rollback leaves nothing; rows left by a killed writer are chained by the beat
task or the next append; callers that must see their entry still get it chained."""

import itertools
import threading
from collections import Counter
from contextlib import contextmanager
from datetime import date

import pytest
from django.db import DatabaseError, connection, transaction

from apps.deviations.chain import GENESIS_HASH
from apps.deviations.models import LogEntry, PendingEntry
from apps.deviations.selectors import chain_verify
from apps.deviations.services import (
    deviation_append,
    deviation_record,
    outcome_unseal,
    pending_sequence,
)
from apps.deviations.tasks import pending_sequence_task
from tests.dbroles import owner_cursor, refused_by_database
from tests.factories import FrozenVersionFactory, UserFactory

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

WRITERS = 16
APPENDS_EACH = 12


class HolderRolledBack(Exception):
    pass


@contextmanager
def lock_held_by_another_transaction(protocol, actor, rationale="holder", *, roll_back=False):
    """A thread (its own connection) appends ``rationale`` chained and keeps its transaction,
    and so the protocol's log lock, open until the body ends; then it commits (or rolls back)."""
    holding, release, errors = threading.Event(), threading.Event(), []

    def hold():
        try:
            with transaction.atomic():
                deviation_append(
                    protocol=protocol, kind="deviation", rationale=rationale, actor=actor,
                    chained=True,
                )  # fmt: skip
                holding.set()
                assert release.wait(timeout=60)
                if roll_back:
                    raise HolderRolledBack
        except HolderRolledBack:
            pass
        except Exception as error:  # reported below; a thread's exception is otherwise lost
            errors.append(error)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(timeout=30), errors
        yield
    finally:
        release.set()
        holder.join(timeout=60)
    assert errors == []


def staged(protocol) -> int:
    return PendingEntry.objects.filter(protocol=protocol).count()


def rationales(protocol) -> list[str]:
    return list(
        LogEntry.objects.filter(protocol=protocol)
        .order_by("seq")
        .values_list("rationale", flat=True)
    )


def assert_one_unbroken_chain(protocol, total: int) -> list[LogEntry]:
    entries = list(LogEntry.objects.filter(protocol=protocol).order_by("seq"))
    assert [e.seq for e in entries] == list(range(1, total + 1))  # no gap, nothing lost
    prev_hashes = [e.prev_hash for e in entries]
    assert prev_hashes[0] == GENESIS_HASH
    assert len(set(prev_hashes)) == total  # no two entries claim one predecessor: no fork
    assert [e.recorded_at for e in entries] == sorted(e.recorded_at for e in entries)
    report = chain_verify(protocol=protocol)
    assert report.ok and report.verified_through == total, report.summary()
    assert staged(protocol) == 0  # nothing left waiting
    return entries


def test_sixteen_contending_single_writers_are_staged_and_all_chained_in_one_chain(protocol):
    writers = [UserFactory(username=f"seqwriter{n}") for n in range(WRITERS)]
    holder = UserFactory(username="holder")
    start, three_each = threading.Barrier(WRITERS + 1), threading.Barrier(WRITERS + 1)
    go_on, returned, errors = threading.Event(), Counter(), []

    def write(user):
        try:
            start.wait(timeout=30)
            refs = [{"type": "writer", "id": user.pk, "label": user.username}]
            for n in range(APPENDS_EACH):
                with transaction.atomic():
                    entry = deviation_append(
                        protocol=protocol, kind="deviation", rationale=f"{user.username} {n}",
                        actor=user, refs=refs,
                    )  # fmt: skip
                returned["staged" if entry is None else "chained"] += 1
                if n == 2:  # three entries each while the lock is held, then a free-for-all
                    three_each.wait(timeout=60)
                    assert go_on.wait(timeout=60)
        except Exception as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(user,)) for user in writers]
    with lock_held_by_another_transaction(protocol, holder):
        for thread in threads:
            thread.start()
        start.wait(timeout=30)
        three_each.wait(timeout=60)
        # Every writer committed three entries while the lock was held: all staged, none chained.
        assert staged(protocol) == 3 * WRITERS
        assert rationales(protocol) == []
        go_on.set()  # the holder commits next; then the writers contend with each other
    for thread in threads:
        thread.join(timeout=120)

    assert errors == []
    assert returned["staged"] >= 3 * WRITERS
    assert sum(returned.values()) == WRITERS * APPENDS_EACH
    entries = assert_one_unbroken_chain(protocol, 1 + WRITERS * APPENDS_EACH)
    assert entries[0].rationale == "holder"
    assert Counter(e.actor_name for e in entries[1:]) == {u.username: APPENDS_EACH for u in writers}
    for user in writers:  # each writer's entries in the order it committed them
        own = [e.rationale for e in entries if e.actor_id == user.pk]
        assert own == [f"{user.username} {n}" for n in range(APPENDS_EACH)]
    switches = sum(a.actor_id != b.actor_id for a, b in itertools.pairwise(entries))
    assert switches >= WRITERS  # the writers really interleaved


def test_a_staged_entry_keeps_what_was_appended(protocol, pi):
    refs = [{"type": "attempt", "id": 7, "label": "attempt 7", "note": None, "late": True}]
    with lock_held_by_another_transaction(protocol, pi):
        with transaction.atomic():
            returned = deviation_append(
                protocol=protocol, kind="exclusion", rationale="  Attempt 7 excluded  ",
                actor=pi, refs=refs, occurred_on=date(2026, 11, 30),
            )  # fmt: skip
        assert returned is None
        pending = PendingEntry.objects.get(protocol=protocol)
        assert (pending.kind, pending.rationale, pending.actor_name) == (
            "exclusion",
            "Attempt 7 excluded",
            pi.username,
        )
    (_holder, entry) = assert_one_unbroken_chain(protocol, 2)
    assert (entry.kind, entry.rationale, entry.actor_id, entry.actor_name) == (
        "exclusion",
        "Attempt 7 excluded",
        pi.pk,
        pi.username,
    )
    assert entry.refs == refs and entry.occurred_on == date(2026, 11, 30)
    assert entry.outcome_visible is False


def test_a_caller_that_rolls_back_leaves_no_pending_row_and_no_entry(protocol, pi):
    class Abort(Exception):
        pass

    with lock_held_by_another_transaction(protocol, pi):
        with pytest.raises(Abort), transaction.atomic():
            assert deviation_append(protocol=protocol, kind="deviation", rationale="undone") is None
            assert staged(protocol) == 1  # staged in the caller's own transaction
            raise Abort
        assert staged(protocol) == 0
    assert rationales(protocol) == ["holder"]
    assert_one_unbroken_chain(protocol, 1)


def test_entries_staged_then_chained_in_one_transaction_keep_their_order(protocol, pi):
    with transaction.atomic():
        with lock_held_by_another_transaction(protocol, pi):
            assert deviation_append(protocol=protocol, kind="deviation", rationale="first") is None
        # The holder has committed: the lock is free, so this append takes it and chains this
        # transaction's own staged entry before its own.
        second = deviation_append(protocol=protocol, kind="deviation", rationale="second")
        assert second is not None and second.seq == 3
    assert rationales(protocol) == ["holder", "first", "second"]
    assert_one_unbroken_chain(protocol, 3)


def _left_by_a_killed_writer(protocol, actor, rationale):
    # Committed without the on-commit step that would have chained it.
    return PendingEntry.objects.create(
        protocol=protocol,
        kind="exclusion",
        rationale=rationale,
        actor=actor,
        actor_name=actor.username,
        refs=[{"type": "attempt", "id": 3, "label": "attempt 3"}],
    )


def test_a_row_left_by_a_killed_writer_is_chained_by_the_beat_task(protocol, pi):
    from tests.factories import ProtocolFactory

    quiet = ProtocolFactory()
    _left_by_a_killed_writer(protocol, pi, "left 1")
    _left_by_a_killed_writer(protocol, pi, "left 2")
    _left_by_a_killed_writer(quiet, pi, "left elsewhere")
    assert pending_sequence_task() == {str(protocol.pk): 2, str(quiet.pk): 1}
    assert rationales(protocol) == ["left 1", "left 2"]
    assert rationales(quiet) == ["left elsewhere"]
    entries = assert_one_unbroken_chain(protocol, 2)
    assert entries[0].refs == [{"type": "attempt", "id": 3, "label": "attempt 3"}]
    assert entries[0].protocol_code == protocol.code
    assert pending_sequence_task() == {}  # nothing twice
    assert pending_sequence(protocol_id=protocol.pk) == 0


def test_a_row_left_by_a_killed_writer_is_chained_by_the_next_append(protocol, pi):
    _left_by_a_killed_writer(protocol, pi, "left")
    with transaction.atomic():
        entry = deviation_append(protocol=protocol, kind="deviation", rationale="next", actor=pi)
    assert entry is not None and entry.seq == 2  # the uncontended path: chained, returned
    assert rationales(protocol) == ["left", "next"]
    assert_one_unbroken_chain(protocol, 2)


def test_an_uncontended_append_returns_its_chained_entry_and_stages_nothing(protocol, pi):
    with transaction.atomic():
        entry = deviation_append(protocol=protocol, kind="deviation", rationale="alone", actor=pi)
        assert staged(protocol) == 0
    assert isinstance(entry, LogEntry) and entry.pk is not None
    assert (entry.seq, entry.prev_hash) == (1, GENESIS_HASH)
    assert_one_unbroken_chain(protocol, 1)


def test_deviation_record_waits_for_the_lock_and_returns_its_chained_entry(protocol, pi):
    results, errors = [], []

    def record():
        try:
            results.append(
                deviation_record(
                    protocol=protocol,
                    user=pi,
                    rationale="recorded by hand",
                    occurred_on=date(2026, 12, 1),
                )
            )
        except Exception as error:
            errors.append(error)
        finally:
            connection.close()

    with lock_held_by_another_transaction(protocol, pi):
        with transaction.atomic():
            assert deviation_append(protocol=protocol, kind="deviation", rationale="staged") is None
        recorder = threading.Thread(target=record)
        recorder.start()
        recorder.join(timeout=0.5)
        assert recorder.is_alive()  # waiting for the lock, not staged
    recorder.join(timeout=30)
    assert errors == []
    (entry,) = results
    assert isinstance(entry, LogEntry)
    assert entry.rationale == "recorded by hand"
    assert rationales(protocol)[entry.seq - 1] == "recorded by hand"
    assert sorted(rationales(protocol)) == ["holder", "recorded by hand", "staged"]
    assert_one_unbroken_chain(protocol, 3)


def test_entries_staged_before_an_unsealing_are_chained_as_written_before_it(protocol, pi):
    version = FrozenVersionFactory(protocol=protocol, label="1.0")
    _left_by_a_killed_writer(protocol, pi, "staged while sealed")
    outcome_unseal(version=version, user=pi, confirmation=protocol.code)
    entries = assert_one_unbroken_chain(protocol, 3)  # the freeze, the staged one, the unsealing
    by_rationale = {e.rationale: e for e in entries}
    assert by_rationale["staged while sealed"].outcome_visible is False
    assert entries[-1].kind == "outcome_unsealed" and entries[-1].outcome_visible is True


def test_rows_turned_away_by_a_holder_that_rolls_back_wait_for_the_beat_task(protocol, pi):
    holder = lock_held_by_another_transaction(protocol, pi, "rolled back", roll_back=True)
    # The append commits; its writer finds the lock held and leaves.
    with holder, transaction.atomic():
        assert deviation_append(protocol=protocol, kind="deviation", rationale="kept") is None
    # The holder's look for staged rows runs only after a commit: the row waits, not lost.
    assert staged(protocol) == 1 and rationales(protocol) == []
    assert pending_sequence_task() == {str(protocol.pk): 1}
    assert rationales(protocol) == ["kept"]
    assert_one_unbroken_chain(protocol, 1)


def test_the_runtime_role_cannot_update_truncate_or_drop_pending_rows(protocol, pi):
    pending = _left_by_a_killed_writer(protocol, pi, "left")

    def refused(sql, params=()):
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(sql, params)
        except DatabaseError as error:
            return str(error)
        pytest.fail(f"the database accepted: {sql}")

    update = "UPDATE deviations_pendingentry SET rationale = 'rewritten' WHERE id = %s"
    assert refused_by_database(refused(update, [pending.pk]), "UPDATE")
    assert refused_by_database(refused("TRUNCATE deviations_pendingentry"), "TRUNCATE")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT has_table_privilege('deviations_pendingentry', 'UPDATE'), "
            "has_table_privilege('deviations_pendingentry', 'DELETE'), "
            "has_table_privilege('deviations_pendingentry', 'INSERT')"
        )
        assert cursor.fetchone() == (False, True, True)
    # Even the owner, who holds UPDATE, is refused by the trigger.
    with pytest.raises(DatabaseError, match="preregistry: UPDATE"), owner_cursor() as cursor:
        cursor.execute(update, [pending.pk])
    assert PendingEntry.objects.get(pk=pending.pk).rationale == "left"
    # DELETE is granted (the sequencer takes rows off the queue), but a row may leave only by
    # being chained: a bare delete fails its transaction at commit, and the row stays.
    drop = "DELETE FROM deviations_pendingentry WHERE id = %s"
    assert "left the queue without being chained" in refused(drop, [pending.pk])
    assert PendingEntry.objects.filter(pk=pending.pk).exists()
    assert pending_sequence(protocol_id=protocol.pk) == 1
    assert staged(protocol) == 0
    entry = LogEntry.objects.get(protocol=protocol)
    assert (entry.rationale, entry.pending_id) == ("left", pending.pk)
    assert_one_unbroken_chain(protocol, 1)


def test_a_staged_row_cannot_leave_under_an_entry_that_says_something_else(protocol, pi):
    # The entry chained under a staged row's id must say what the row says: the runtime role
    # cannot swap a staged entry for another, even one chained in order (the verifier would
    # find the chain intact).
    pending = _left_by_a_killed_writer(protocol, pi, "what happened")
    with pytest.raises(DatabaseError, match="left the queue without being chained"):  # noqa: SIM117
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("DELETE FROM deviations_pendingentry WHERE id = %s", [pending.pk])
            deviation_append(
                protocol=protocol, kind="exclusion", rationale="something else", actor=pi,
                chained=True,
            )  # fmt: skip
            # Chained in order, but not under the staged row's id, nor saying what it says.
            assert LogEntry.objects.get(protocol=protocol).pending_id is None
    assert PendingEntry.objects.filter(pk=pending.pk).exists()
    assert LogEntry.objects.filter(protocol=protocol).count() == 0
