"""The outcome seal: sealed until a PI unseals a frozen version, and every later entry says so."""

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction
from django.urls import reverse

from apps.deviations.models import AppendOnlyError, LogEntry, OutcomeUnsealing
from apps.deviations.selectors import chain_verify, outcomes_visible
from apps.deviations.services import deviation_append, outcome_unseal
from tests.factories import (
    FrozenVersionFactory,
    ProtocolFactory,
    ProtocolVersionFactory,
    api_url,
)

pytestmark = pytest.mark.django_db


def test_an_entry_after_unsealing_says_outcomes_were_seen_though_the_caller_never_said_so(
    protocol, pi, frozen_version, append
):
    (before,) = append(protocol, 1, kind="exclusion")
    assert before.outcome_visible is False

    outcome_unseal(version=frozen_version, user=pi, confirmation=protocol.code)

    with transaction.atomic():
        # Exactly what an exclusion service passes: no word about outcomes.
        after = deviation_append(
            protocol=protocol, kind="exclusion", rationale="Episode 12 excluded", actor=pi
        )
    after.refresh_from_db()
    assert after.outcome_visible is True
    assert chain_verify(protocol=protocol).ok


def test_unsealing_writes_an_outcome_unsealed_entry_that_is_itself_after_the_seal(
    protocol, pi, frozen_version
):
    unsealing = outcome_unseal(version=frozen_version, user=pi, confirmation=protocol.code)
    # The protocol's log holds the freeze's entry, then the unsealing's.
    freeze_entry, entry = LogEntry.objects.filter(protocol=protocol).order_by("seq")
    assert freeze_entry.kind == "freeze"
    assert entry.kind == "outcome_unsealed"
    assert entry.actor == pi
    assert entry.outcome_visible is True
    assert entry.refs == [
        {
            "type": "version",
            "id": frozen_version.pk,
            "label": f"{protocol.code} v1.0",
            "sha256": frozen_version.sha256,
        }
    ]
    assert unsealing.unsealed_by == pi
    assert unsealing.confirmation == protocol.code


def test_outcomes_visible_is_per_version_and_false_until_unsealed(protocol, pi, frozen_version):
    later = FrozenVersionFactory(protocol=protocol, label="1.1")
    assert outcomes_visible(frozen_version) is False
    outcome_unseal(version=frozen_version, user=pi, confirmation=protocol.code)
    assert outcomes_visible(frozen_version) is True
    assert outcomes_visible(frozen_version.pk) is True
    assert outcomes_visible(later) is False


def test_unsealing_one_protocol_leaves_another_protocols_entries_sealed(
    protocol, pi, frozen_version, append
):
    other = ProtocolFactory()
    outcome_unseal(version=frozen_version, user=pi, confirmation=protocol.code)
    (entry,) = append(other, 1)
    assert entry.outcome_visible is False


@pytest.mark.parametrize("typed", ["", "yes", "opb", " P-CODE ", "P-CODE!"])
def test_unsealing_needs_the_protocol_code_typed_exactly(pi, frozen_version, typed):
    protocol = frozen_version.protocol
    typed = typed.replace("P-CODE", protocol.code)
    with pytest.raises(ValidationError) as refused:
        outcome_unseal(version=frozen_version, user=pi, confirmation=typed)
    assert refused.value.message_dict["confirmation"] == [
        f"Type the protocol code {protocol.code} exactly to confirm that you unseal the outcomes."
    ]
    assert not outcomes_visible(frozen_version)
    assert not LogEntry.objects.filter(kind="outcome_unsealed").exists()


def test_a_draft_version_cannot_be_unsealed(protocol, pi):
    draft = ProtocolVersionFactory(protocol=protocol, label="1.0")
    with pytest.raises(ValidationError, match="only a frozen version"):
        outcome_unseal(version=draft, user=pi, confirmation=protocol.code)
    assert not OutcomeUnsealing.objects.exists()


@pytest.mark.parametrize(
    ("person", "status"),
    [("editor", 403), ("auditor", 403), ("reviewer", 404), ("outsider", 404)],
)
def test_only_the_pi_unseals(request, client, pi, person, status, frozen_version):
    # Who may unseal is the API's and the page's to check (the service checks the state).
    url = api_url(frozen_version, "unseal")
    body = {"confirmation": frozen_version.protocol.code}
    client.force_login(request.getfixturevalue(person))
    assert client.post(url, body, content_type="application/json").status_code == status
    page = reverse("deviations:unseal", args=[frozen_version.protocol.code, frozen_version.label])
    assert client.post(page, body).status_code == status
    assert not outcomes_visible(frozen_version)
    client.force_login(pi)
    assert client.post(url, body, content_type="application/json").status_code == 201
    assert outcomes_visible(frozen_version)


def test_unsealing_twice_is_refused_with_who_did_it_first(protocol, pi, frozen_version):
    outcome_unseal(version=frozen_version, user=pi, confirmation=protocol.code)
    with pytest.raises(ValidationError, match=f"already unsealed by {pi.username}"):
        outcome_unseal(version=frozen_version, user=pi, confirmation=protocol.code)
    assert LogEntry.objects.filter(kind="outcome_unsealed").count() == 1


def test_an_unsealing_cannot_be_undone_by_the_application(protocol, pi, frozen_version):
    unsealing = outcome_unseal(version=frozen_version, user=pi, confirmation=protocol.code)
    with pytest.raises(AppendOnlyError):
        unsealing.delete()
    with pytest.raises(AppendOnlyError):
        OutcomeUnsealing.objects.all().delete()
    assert outcomes_visible(frozen_version)
