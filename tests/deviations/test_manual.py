"""Deviations recorded by hand: PI or editor, a rationale, a date; "outcomes seen" from the seal."""

from datetime import date, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from apps.deviations.models import LogEntry
from apps.deviations.services import deviation_record, outcome_unseal

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("person", ["pi", "editor"])
def test_a_pi_or_an_editor_records_a_deviation_with_its_date(request, protocol, person):
    user = request.getfixturevalue(person)
    entry = deviation_record(
        protocol=protocol,
        user=user,
        rationale="Provider outage: episodes 40–64 reordered to the next day.",
        occurred_on=date(2026, 11, 2),
        kind="reorder",
    )
    entry.refresh_from_db()
    assert (entry.kind, entry.actor, entry.occurred_on) == ("reorder", user, date(2026, 11, 2))
    assert entry.outcome_visible is False


@pytest.mark.parametrize(
    ("person", "status"), [("auditor", 403), ("reviewer", 404), ("outsider", 404)]
)
def test_no_one_else_records_deviations(request, client, protocol, pi, person, status):
    # Who may record is the API's and the page's to check (the service checks the input).
    url = f"/api/v1/protocols/{protocol.code}/deviations"
    body = {"rationale": "x", "occurred_on": "2026-11-02"}
    client.force_login(request.getfixturevalue(person))
    assert client.post(url, body, content_type="application/json").status_code == status
    assert client.post(f"/protocols/{protocol.code}/deviations/new/", body).status_code == status
    assert not LogEntry.objects.exists()
    client.force_login(pi)
    assert client.post(url, body, content_type="application/json").status_code == 201


def test_a_blank_rationale_is_refused_with_a_clear_message(protocol, pi):
    with pytest.raises(ValidationError) as refused:
        deviation_record(protocol=protocol, user=pi, rationale=" \n ", occurred_on=date.today())  # noqa: DTZ011
    assert refused.value.message_dict["rationale"] == [
        "A rationale is required: say what happened and why."
    ]


def test_a_deviation_cannot_be_dated_in_the_future(protocol, pi):
    tomorrow = timezone.now().date() + timedelta(days=2)  # past today everywhere on Earth
    with pytest.raises(ValidationError, match="is in the future"):
        deviation_record(protocol=protocol, user=pi, rationale="x", occurred_on=tomorrow)


def test_only_deviation_kinds_are_recorded_by_hand(protocol, pi):
    with pytest.raises(ValidationError, match="cannot be recorded by hand"):
        deviation_record(
            protocol=protocol, user=pi, rationale="x", occurred_on=date(2026, 1, 1), kind="freeze"
        )


def test_after_unsealing_a_manual_deviation_says_outcome_data_had_been_seen(
    protocol, pi, editor, frozen_version
):
    outcome_unseal(version=frozen_version, user=pi, confirmation=protocol.code)
    entry = deviation_record(
        protocol=protocol,
        user=editor,
        rationale="Late exclusion rule",
        occurred_on=date(2026, 1, 1),
    )
    assert entry.outcome_visible is True
