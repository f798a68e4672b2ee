"""Deviations 0009 against the runtime role: a staged PendingEntry leaves the queue only by being
chained. Each test tries, as the runtime role, to drop a staged row without chaining it, or to
make one that stops the protocol's other appends."""

import pytest
from django.db import DatabaseError, connection, transaction

from apps.deviations.chain import GENESIS_HASH
from apps.deviations.models import LogEntry, PendingEntry
from apps.deviations.selectors import chain_verify
from apps.deviations.services import deviation_append, pending_sequence

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _stage(protocol, actor, rationale="left"):
    return PendingEntry.objects.create(
        protocol=protocol, kind="exclusion", rationale=rationale, actor=actor,
        actor_name=actor.username, refs=[{"type": "attempt", "id": 3, "label": "attempt 3"}],
    )  # fmt: skip


def _run(*statements):
    """Run statements in one transaction as the runtime role; the error text or None."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            for sql, params in statements:
                cursor.execute(sql, params)
    except DatabaseError as error:
        return str(error)
    return None


DROP = "DELETE FROM deviations_pendingentry WHERE id = %s"


def test_set_constraints_immediate_or_deferred_does_not_let_a_row_out(protocol, pi):
    p = _stage(protocol, pi)
    for mode in ("IMMEDIATE", "DEFERRED"):
        for target in ("ALL", "deviations_pendingentry_chained"):
            err = _run((f"SET CONSTRAINTS {target} {mode}", ()), (DROP, [p.pk]))
            assert err and "without being chained" in err, (mode, target, err)
    assert PendingEntry.objects.filter(pk=p.pk).exists()


def test_delete_in_a_rolled_back_savepoint_keeps_the_row(protocol, pi):
    p = _stage(protocol, pi)
    with transaction.atomic():
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(DROP, [p.pk])
                raise RuntimeError
        except RuntimeError:
            pass
    assert PendingEntry.objects.filter(pk=p.pk).exists()


def test_delete_via_cte_and_via_using_are_refused(protocol, pi):
    p = _stage(protocol, pi)
    err = _run(("WITH d AS (DELETE FROM deviations_pendingentry WHERE id = %s RETURNING id) "
                "SELECT count(*) FROM d", [p.pk]))  # fmt: skip
    assert err and "without being chained" in err
    err = _run(("DELETE FROM deviations_pendingentry p USING deviations_pendingentry q "
                "WHERE p.id = q.id AND p.id = %s", [p.pk]))  # fmt: skip
    assert err and "without being chained" in err
    assert PendingEntry.objects.filter(pk=p.pk).exists()


def test_staging_then_deleting_own_row_in_one_transaction_is_refused(protocol, pi):
    def go():
        with transaction.atomic():
            q = _stage(protocol, pi, "mine")
            with connection.cursor() as cursor:
                cursor.execute(DROP, [q.pk])

    with pytest.raises(DatabaseError, match="without being chained"):
        go()
    assert PendingEntry.objects.filter(protocol=protocol).count() == 0  # rolled back whole


@pytest.mark.parametrize(
    "sql",
    [
        "SET session_replication_role = replica",
        "ALTER TABLE deviations_pendingentry DISABLE TRIGGER deviations_pendingentry_chained",
        "ALTER TABLE deviations_pendingentry DISABLE TRIGGER ALL",
        "DROP TRIGGER deviations_pendingentry_chained ON deviations_pendingentry",
        "CREATE TEMP TABLE deviations_logentry (pending_id bigint)",
        "CREATE OR REPLACE FUNCTION public.preregistry_pending_chained() RETURNS trigger "
        "LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$",
        "CREATE FUNCTION pg_temp.f() RETURNS int LANGUAGE sql AS 'select 1'",
        "ALTER FUNCTION public.preregistry_pending_chained() SET search_path = pg_temp, public",
        "SET LOCAL search_path = pg_temp, public",
    ],
)
def test_schema_and_session_tricks_are_refused_or_harmless(protocol, pi, sql):
    p = _stage(protocol, pi)
    err = _run((sql, ()), (DROP, [p.pk]))
    assert err is not None, sql
    assert PendingEntry.objects.filter(pk=p.pk).exists()


def _fake_entry(protocol, p, *, seq, prev_hash, hash_):
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO deviations_logentry (protocol_id, protocol_code, seq, recorded_at, "
            "actor_id, actor_name, kind, rationale, refs, occurred_on, outcome_visible, "
            "prev_hash, hash, pending_id) "
            "SELECT protocol_id, %s, %s, now(), actor_id, actor_name, kind, rationale, refs, "
            "occurred_on, false, %s, %s, id FROM deviations_pendingentry WHERE id = %s",
            [protocol.code, seq, prev_hash, hash_, p.pk],
        )


@pytest.mark.parametrize(
    "seq,prev,hash_",
    [(1, GENESIS_HASH, "f" * 64), (1, "0" * 64, "e" * 64), (7, GENESIS_HASH, "d" * 64),
     (2_000_000_000, "1" * 64, "c" * 64)],
)  # fmt: skip
def test_a_fake_entry_under_the_pending_id_lets_the_row_out_but_the_verifier_flags_it(
    protocol, pi, seq, prev, hash_
):
    p = _stage(protocol, pi)
    with transaction.atomic(), connection.cursor() as cursor:
        _fake_entry(protocol, p, seq=seq, prev_hash=prev, hash_=hash_)
        cursor.execute(DROP, [p.pk])
    # The trigger only checks content under the id: the commit goes through (by design)...
    assert not PendingEntry.objects.filter(pk=p.pk).exists()
    report = chain_verify(protocol=protocol)
    # ...so the verifier must catch it.
    assert not report.ok, report.summary()


def test_a_fake_entry_after_honest_entries_is_flagged(protocol, pi):
    with transaction.atomic():
        deviation_append(protocol=protocol, kind="deviation", rationale="a", actor=pi)
        deviation_append(protocol=protocol, kind="deviation", rationale="b", actor=pi)
    head = LogEntry.objects.filter(protocol=protocol).order_by("-seq").first()
    p = _stage(protocol, pi)
    with transaction.atomic(), connection.cursor() as cursor:
        _fake_entry(protocol, p, seq=head.seq + 1, prev_hash=head.hash, hash_="a" * 64)
        cursor.execute(DROP, [p.pk])
    report = chain_verify(protocol=protocol)
    assert not report.ok and report.verified_through == 2, report.summary()


def test_honest_paths_still_work(protocol, pi):
    _stage(protocol, pi, "one")
    _stage(protocol, pi, "two")
    assert pending_sequence(protocol_id=protocol.pk) == 2
    with transaction.atomic():
        deviation_append(protocol=protocol, kind="deviation", rationale="three", actor=pi)
    report = chain_verify(protocol=protocol)
    assert report.ok and report.verified_through == 3
    assert list(LogEntry.objects.filter(protocol=protocol).values_list("pending_id", flat=True)
                .order_by("seq"))[2] is None  # fmt: skip


@pytest.mark.parametrize(
    "refs",
    [
        [{"type": "attempt", "id": 0.30000000000000004, "label": "x"}],  # not 12-digit stable
        {"type": "attempt", "id": 3, "label": "x"},  # an object, not a list
        "attempt 3",  # a string
    ],
    ids=["float-17-digits", "object", "string"],
)
def test_a_staged_row_the_sequencer_cannot_reproduce_stays_queued_and_appends_go_on(
    protocol, pi, refs
):
    # A row written past the application (the runtime role, or a writer without canonical_json)
    # whose refs would not come back the same from the chain: it is never chained altered (the
    # trigger would refuse its delete, and every later append of the protocol with it); it
    # stays staged, visible, and the protocol's log goes on.
    odd = PendingEntry.objects.create(
        protocol=protocol, kind="exclusion", rationale="odd", actor=pi, actor_name=pi.username,
        refs=refs,
    )  # fmt: skip
    with transaction.atomic():
        entry = deviation_append(protocol=protocol, kind="deviation", rationale="next", actor=pi)
    assert entry is not None
    assert pending_sequence(protocol_id=protocol.pk) == 0
    left = PendingEntry.objects.filter(pk=odd.pk).first()
    chained = LogEntry.objects.filter(protocol=protocol, pending_id=odd.pk).first()
    if isinstance(refs, list) and chained is not None:  # chained, then exactly as staged
        assert left is None and chained.refs == refs
    else:
        assert left is not None and chained is None
    assert LogEntry.objects.filter(protocol=protocol, rationale="next").exists()
    report = chain_verify(protocol=protocol)
    assert report.ok, report.summary()


def test_staged_rows_with_awkward_but_valid_content_are_chained(protocol, pi):
    from datetime import date

    PendingEntry.objects.create(
        protocol=protocol, kind="deviation",
        rationale="tab\there \\N back\\slash\r\nCRLF \\. é😀\u2028",
        actor=pi, actor_name=pi.username, occurred_on=date(2026, 1, 2),
        refs=[{"type": "attempt", "id": 2**62, "label": "\"quoted\" \\ 😀"},
              {"type": "x", "id": "7", "label": "", "flag": True, "none": None}],
    )  # fmt: skip
    assert pending_sequence(protocol_id=protocol.pk) == 1
    with transaction.atomic():
        deviation_append(protocol=protocol, kind="deviation", rationale="next", actor=pi)
    report = chain_verify(protocol=protocol)
    assert report.ok and report.verified_through == 2, report.summary()


def test_one_protocols_failure_does_not_stop_the_beat_task_for_the_others(
    protocol, pi, monkeypatch
):
    # pending_sequence_all chains protocol by protocol; one that fails (here, made to) is logged
    # and tried again next run, and the protocols after it are still chained.
    from apps.deviations import services
    from tests.factories import ProtocolFactory

    later = ProtocolFactory()
    assert later.pk > protocol.pk
    _stage(protocol, pi, "first")
    _stage(later, pi, "innocent")
    real = services.pending_sequence

    def failing_first(*, protocol_id):
        if protocol_id == protocol.pk:
            raise DatabaseError("made to fail")
        return real(protocol_id=protocol_id)

    monkeypatch.setattr(services, "pending_sequence", failing_first)
    assert services.pending_sequence_all() == {later.pk: 1}
    assert PendingEntry.objects.filter(protocol=later).count() == 0
    assert PendingEntry.objects.filter(protocol=protocol).count() == 1
