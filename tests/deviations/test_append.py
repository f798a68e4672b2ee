"""deviation_append: the only way into the log, in the caller's transaction, chained and checked."""

import itertools
from datetime import date, datetime

import pytest
from django.core.exceptions import ValidationError
from django.db import connection, transaction

from apps.deviations.chain import GENESIS_HASH, entry_hash
from apps.deviations.models import AppendOnlyError, LogEntry
from apps.deviations.selectors import chain_verify, entry_dict
from apps.deviations.services import NewEntry, deviation_append, deviation_append_many
from tests.factories import ProtocolFactory

pytestmark = pytest.mark.django_db


def test_entries_are_numbered_from_one_and_each_carries_the_hash_of_the_one_before(
    protocol, append
):
    entries = append(protocol, 4)
    assert [e.seq for e in entries] == [1, 2, 3, 4]
    assert entries[0].prev_hash == GENESIS_HASH
    for before, after in itertools.pairwise(entries):
        assert after.prev_hash == before.hash
    for entry in entries:
        entry.refresh_from_db()
        assert entry_hash(entry_dict(entry)) == entry.hash
    assert chain_verify(protocol=protocol).verified_through == 4


def test_each_protocol_has_its_own_chain(protocol, append):
    other = ProtocolFactory()
    append(protocol, 2)
    (first_of_other,) = append(other, 1)
    assert first_of_other.seq == 1
    assert first_of_other.prev_hash == GENESIS_HASH


def test_the_entry_records_who_acted_and_the_system_when_no_one_did(protocol, pi, append):
    by_pi, by_system = append(protocol, 1)[0], append(protocol, 1, actor=None)[0]
    assert (by_pi.actor, by_pi.actor_name) == (pi, pi.username)
    assert (by_system.actor, by_system.actor_name) == (None, "system")


def test_entry_times_come_in_chain_order(protocol, append):
    entries = append(protocol, 5)
    times = [e.recorded_at for e in entries]
    assert times == sorted(times)


@pytest.mark.postgres
def test_entry_time_is_the_database_clock(protocol, append):
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        before = cursor.fetchone()[0]
    (entry,) = append(protocol, 1)
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        after = cursor.fetchone()[0]
    assert before <= entry.recorded_at <= after


def test_the_entry_rolls_back_with_the_callers_transaction(protocol, pi):
    class CallersWorkFailed(Exception):
        pass

    with pytest.raises(CallersWorkFailed), transaction.atomic():
        deviation_append(protocol=protocol, kind="freeze", rationale="Froze v1.0", actor=pi)
        raise CallersWorkFailed  # the caller's own work fails after the append
    assert not LogEntry.objects.filter(protocol=protocol).exists()


@pytest.mark.django_db(transaction=True)
def test_appending_outside_a_transaction_is_refused(protocol, pi):
    with pytest.raises(RuntimeError, match="inside the caller's transaction"):
        deviation_append(protocol=protocol, kind="freeze", rationale="Froze v1.0", actor=pi)


@pytest.mark.parametrize(
    ("values", "field", "message"),
    [
        ({"rationale": "   "}, "rationale", "A rationale is required"),
        ({"rationale": "null \x00 byte"}, "rationale", "NUL"),
        ({"kind": "fraud"}, "kind", "'fraud' is not a log entry kind"),
        ({"kind": "outcome_unsealed"}, "kind", "written by outcome_unseal"),
        ({"refs": [{"id": 3, "label": "no type"}]}, "refs", "ref 1 needs a type"),
        ({"refs": [{"type": "version", "label": "no id"}]}, "refs", "needs an id"),
        ({"refs": [{"type": "version", "id": 3, "score": 0.5}]}, "refs", "'score' must be text"),
        ({"refs": [{"type": "version", "id": 3, "x": {"a": 1}}]}, "refs", "'x' must be text"),
        ({"refs": {"type": "version", "id": 3}}, "refs", "must be a list"),
        ({"occurred_on": datetime(2026, 1, 1)}, "occurred_on", "no time of day"),  # noqa: DTZ001
    ],
)
def test_bad_input_is_refused_naming_the_field(protocol, pi, values, field, message):
    arguments = {"kind": "deviation", "rationale": "A reason", "actor": pi, **values}
    with pytest.raises(ValidationError) as refused, transaction.atomic():
        deviation_append(protocol=protocol, **arguments)
    assert field in refused.value.message_dict
    assert message in " ".join(refused.value.message_dict[field])
    assert not LogEntry.objects.exists()


def test_a_ref_without_a_label_gets_one_and_text_ids_are_kept(protocol, pi):
    with transaction.atomic():
        entry = deviation_append(
            protocol=protocol,
            kind="analysis",
            rationale="Run 4 finished",
            actor=pi,
            refs=[{"type": "run", "id": 4}, {"type": "blob", "id": "ab" * 32, "label": "result"}],
        )
    entry.refresh_from_db()
    assert entry.refs == [
        {"type": "run", "id": 4, "label": "run 4"},
        {"type": "blob", "id": "ab" * 32, "label": "result"},
    ]


def test_the_day_a_deviation_happened_is_kept_and_hashed(protocol, pi):
    with transaction.atomic():
        entry = deviation_append(
            protocol=protocol,
            kind="deviation",
            rationale="Reordered episodes",
            actor=pi,
            occurred_on=date(2026, 11, 2),
        )
    entry.refresh_from_db()
    assert entry.occurred_on == date(2026, 11, 2)
    assert entry_dict(entry)["occurred_on"] == "2026-11-02"
    assert entry_hash(entry_dict(entry)) == entry.hash


def test_the_application_has_no_way_to_change_or_delete_an_entry(protocol, append):
    (entry,) = append(protocol, 1)
    entry.rationale = "rewritten"
    with pytest.raises(AppendOnlyError):
        entry.save()
    with pytest.raises(AppendOnlyError):
        entry.delete()
    with pytest.raises(AppendOnlyError):
        LogEntry.objects.filter(pk=entry.pk).update(rationale="rewritten")
    with pytest.raises(AppendOnlyError):
        LogEntry.objects.filter(pk=entry.pk).delete()
    entry.refresh_from_db()
    assert entry.rationale.startswith("Entry 1")


def test_the_admin_is_read_only_for_the_log(admin_client, protocol, append):
    (entry,) = append(protocol, 1)
    assert admin_client.get("/admin/deviations/logentry/").status_code == 200
    assert admin_client.get("/admin/deviations/logentry/add/").status_code == 403
    response = admin_client.post(
        f"/admin/deviations/logentry/{entry.pk}/change/", {"rationale": "rewritten"}
    )
    assert response.status_code == 403
    assert admin_client.post(f"/admin/deviations/logentry/{entry.pk}/delete/").status_code == 403
    assert admin_client.get("/admin/deviations/outcomeunsealing/add/").status_code == 403
    entry.refresh_from_db()
    assert entry.rationale.startswith("Entry 1")


def test_a_batch_continues_the_chain_in_order_in_one_insert(
    protocol, pi, append, django_assert_max_num_queries
):
    append(protocol, 2)
    entries = [
        NewEntry("exclusion", f"Batch entry {n}", pi if n % 2 else None, [{"type": "x", "id": n}])
        for n in range(1, 6)
    ]
    # on PostgreSQL: the lock, the chain's head, one INSERT (and the savepoint's two)
    with transaction.atomic(), django_assert_max_num_queries(5):
        written = deviation_append_many(protocol=protocol, entries=entries)
    assert [e["seq"] for e in written] == [3, 4, 5, 6, 7]
    stored = list(LogEntry.objects.filter(protocol=protocol).order_by("seq"))
    assert [e.rationale for e in stored[2:]] == [f"Batch entry {n}" for n in range(1, 6)]
    assert [e.actor_name for e in stored[2:]] == [pi.username, "system"] * 2 + [pi.username]
    assert stored[2].prev_hash == stored[1].hash
    for entry in stored:
        assert entry_hash(entry_dict(entry)) == entry.hash
    report = chain_verify(protocol=protocol)
    assert report.ok and report.verified_through == 7, report.summary()


def test_a_batch_with_one_bad_entry_writes_nothing_and_names_the_entry(protocol, pi):
    entries = [NewEntry("deviation", "fine", pi), NewEntry("deviation", "  ", pi)]
    with pytest.raises(ValidationError) as refused, transaction.atomic():
        deviation_append_many(protocol=protocol, entries=entries)
    assert refused.value.message_dict["rationale"][0].startswith("entry 2: ")
    with pytest.raises(ValidationError, match="outcome_unseal"), transaction.atomic():
        deviation_append_many(protocol=protocol, entries=[NewEntry("outcome_unsealed", "x")])
    assert not LogEntry.objects.filter(protocol=protocol).exists()
