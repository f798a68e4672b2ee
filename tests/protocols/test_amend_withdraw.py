"""Amendment opens a draft that copies everything; withdrawal leaves a tombstone; both are
logged. A draft that was never frozen can be set aside the same way, and then stays as it is."""

import pytest
from django.core.exceptions import ValidationError

from apps.deviations.models import LogEntry, OutcomeUnsealing
from apps.protocols.components import VersionComponent, register_component
from apps.protocols.gate import version_gate
from apps.protocols.services import (
    FreezeRefused,
    VersionStateError,
    version_amend,
    version_freeze,
    version_update,
    version_withdraw,
)

pytestmark = pytest.mark.django_db


def test_amend_copies_sections_parameters_table_and_components(frozen, creator):
    copied = []
    register_component(
        VersionComponent(name="items", copy=lambda old, new: copied.append((old.pk, new.pk)))
    )
    amendment = version_amend(version=frozen, user=creator)
    assert (amendment.label, amendment.state, amendment.supersedes) == ("1.1", "draft", frozen)
    for section in ("background", "hypotheses", "design", "exclusions", "analysis"):
        assert getattr(amendment, section) == getattr(frozen, section)
    assert amendment.decision_table == frozen.decision_table
    assert list(amendment.parameters.values_list("name", "value", "kind", "minimum")) == list(
        frozen.parameters.values_list("name", "value", "kind", "minimum")
    )
    assert copied == [(frozen.pk, amendment.pk)]
    assert amendment.amendment_rationale == ""


def test_the_amended_version_stays_frozen_until_its_successor_freezes(frozen, creator):
    amendment = version_amend(version=frozen, user=creator)
    frozen.refresh_from_db()
    assert frozen.status == "frozen"
    version_update(version=amendment, user=creator, amendment_rationale="Tighter ε.")
    version_freeze(version=amendment, user=creator)
    frozen.refresh_from_db()
    assert frozen.status == "superseded"
    assert amendment.status == "frozen"


def test_a_version_is_amended_once(frozen, creator):
    version_amend(version=frozen, user=creator)
    with pytest.raises(VersionStateError, match=r"already has a successor, v1\.1"):
        version_amend(version=frozen, user=creator)


def test_labels_count_on_1_9_to_1_10(frozen, creator):
    version = frozen
    for expected in ("1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.7", "1.8", "1.9", "1.10"):
        version = version_amend(version=version, user=creator)
        assert version.label == expected
        version_update(version=version, user=creator, amendment_rationale="next")
        version = version_freeze(version=version, user=creator)


def test_withdrawal_keeps_a_tombstone_and_writes_an_entry(frozen, creator):
    withdrawal = version_withdraw(version=frozen, user=creator, reason="The pilot was flawed.")
    assert withdrawal.reason == "The pilot was flawed."
    frozen.refresh_from_db()
    assert frozen.status == "withdrawn"
    assert frozen.sha256  # the document is kept
    entry = LogEntry.objects.order_by("-seq").first()
    assert (entry.kind, entry.rationale) == (
        "withdrawal",
        "Withdrew OPB-T v1.0: The pilot was flawed.",
    )
    assert entry.outcome_visible is False


def test_a_withdrawal_after_outcomes_were_seen_is_marked_so(frozen, creator):
    OutcomeUnsealing.objects.create(version=frozen, unsealed_by=creator, confirmation="yes")
    version_withdraw(version=frozen, user=creator, reason="Seen, then withdrawn.")
    assert LogEntry.objects.order_by("-seq").first().outcome_visible is True


def test_withdrawal_needs_a_reason_and_a_frozen_current_version(draft, frozen, creator):
    with pytest.raises(ValidationError) as error:
        version_withdraw(version=frozen, user=creator, reason="  ")
    assert "reason" in error.value.message_dict
    version_withdraw(version=frozen, user=creator, reason="once")
    with pytest.raises(VersionStateError, match="already withdrawn"):
        version_withdraw(version=frozen, user=creator, reason="twice")


def test_a_draft_is_not_withdrawn(draft, creator):
    with pytest.raises(VersionStateError, match="is a draft"):
        version_withdraw(version=draft, user=creator, reason="no")


def test_a_superseded_version_is_not_withdrawn_its_successor_is(frozen, creator):
    amendment = version_amend(version=frozen, user=creator)
    version_update(version=amendment, user=creator, amendment_rationale="r")
    version_freeze(version=amendment, user=creator)
    with pytest.raises(VersionStateError, match=r"withdraw v1\.1 instead"):
        version_withdraw(version=frozen, user=creator, reason="no")


def test_amending_a_draft_sets_it_aside_unaltered_and_closed(ready_draft, creator):
    before = {f: getattr(ready_draft, f) for f in ("hypotheses", "design", "updated_at")}
    successor = version_amend(version=ready_draft, user=creator)
    ready_draft.refresh_from_db()
    assert ready_draft.state == "draft"
    assert ready_draft.status == "superseded"
    assert ready_draft.is_set_aside and not ready_draft.is_editable
    assert {f: getattr(ready_draft, f) for f in before} == before
    with pytest.raises(VersionStateError, match=r"set aside for v1\.1"):
        version_update(version=ready_draft, user=creator, sections={"design": "changed"})
    with pytest.raises(VersionStateError, match="set aside"):
        version_freeze(version=ready_draft, user=creator)
    assert [p.code for p in version_gate(version=ready_draft)] == ["set_aside"]
    assert successor.supersedes == ready_draft and successor.is_editable


def test_the_successor_of_a_set_aside_draft_needs_a_rationale_too(ready_draft, creator):
    successor = version_amend(version=ready_draft, user=creator)
    with pytest.raises(FreezeRefused) as refusal:
        version_freeze(version=successor, user=creator)
    assert [p.code for p in refusal.value.problems] == ["rationale_missing"]


def test_a_withdrawn_version_may_be_re_registered_by_amendment(frozen, creator):
    version_withdraw(version=frozen, user=creator, reason="Flawed pilot.")
    amendment = version_amend(version=frozen, user=creator)
    version_update(version=amendment, user=creator, amendment_rationale="Re-registered.")
    version_freeze(version=amendment, user=creator)
    frozen.refresh_from_db()
    assert frozen.status == "withdrawn"  # the tombstone outranks "superseded"
    # (the creator's automatic PI grant is a membership entry of its own)
    assert [e.kind for e in LogEntry.objects.exclude(kind="membership").order_by("seq")] == [
        "freeze",
        "withdrawal",
        "amendment",
    ]
