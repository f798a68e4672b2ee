"""Publishing a frozen version: now or under embargo, logged, never twice, never undone; the
embargo ends by itself (the beat task, idempotent) or early by the PI."""

from datetime import UTC, date, datetime, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from apps.deviations.models import EntryKind, LogEntry
from apps.protocols.services import version_withdraw
from apps.registry.models import Publication
from apps.registry.services import (
    embargo_end,
    embargo_limit,
    embargoes_end_due,
    today_utc,
    version_publish,
)
from apps.registry.tasks import embargoes_end
from tests.factories import ProtocolVersionFactory

pytestmark = pytest.mark.django_db


def _registry_entries(version):
    return list(
        LogEntry.objects.filter(protocol=version.protocol, kind=EntryKind.REGISTRY).order_by("seq")
    )


def test_publishing_now_makes_the_version_public_and_logs_who_and_when(frozen, study_pi):
    publication = version_publish(version=frozen, user=study_pi, authors="A. Author, B. Author")
    assert publication.is_public
    assert publication.embargo_until is None
    (entry,) = _registry_entries(frozen)
    assert entry.actor_name == study_pi.username
    assert "public at once" in entry.rationale
    assert entry.refs[0]["sha256"] == frozen.sha256


def test_publishing_under_embargo_keeps_it_private_and_logs_the_day(frozen, study_pi):
    day = today_utc() + timedelta(days=30)
    publication = version_publish(version=frozen, user=study_pi, embargo_until=day)
    assert not publication.is_public
    (entry,) = _registry_entries(frozen)
    assert f"under embargo until {day}" in entry.rationale


@pytest.mark.parametrize("days", [0, -1, -400], ids=["today", "yesterday", "last-year"])
def test_an_embargo_day_not_after_today_is_refused_and_nothing_is_written(frozen, study_pi, days):
    with pytest.raises(ValidationError) as refused:
        version_publish(
            version=frozen, user=study_pi, embargo_until=today_utc() + timedelta(days=days)
        )
    assert "embargo_until" in refused.value.message_dict
    assert not Publication.objects.exists()
    assert _registry_entries(frozen) == []


def test_an_embargo_past_four_years_is_refused_and_the_last_day_is_allowed(frozen, study_pi):
    limit = embargo_limit(today_utc())
    with pytest.raises(ValidationError, match="at most 4 years"):
        version_publish(version=frozen, user=study_pi, embargo_until=limit + timedelta(days=1))
    assert not Publication.objects.exists()
    assert (
        version_publish(version=frozen, user=study_pi, embargo_until=limit).embargo_until == limit
    )


def test_the_four_year_limit_of_a_leap_day_is_the_28th_of_february_when_that_year_has_none():
    assert embargo_limit(date(2028, 2, 29)) == date(2032, 2, 29)
    assert embargo_limit(date(2096, 2, 29)) == date(2100, 2, 28)  # 2100 is not a leap year
    assert embargo_limit(date(2026, 12, 4)) == date(2030, 12, 4)


def test_a_draft_cannot_be_published(study_pi):
    draft = ProtocolVersionFactory(created_by=study_pi)
    with pytest.raises(ValidationError, match="only a frozen version"):
        version_publish(version=draft, user=study_pi)
    assert not Publication.objects.exists()


def test_a_version_is_published_once(frozen, study_pi):
    version_publish(version=frozen, user=study_pi)
    with pytest.raises(ValidationError, match="already published"):
        version_publish(version=frozen, user=study_pi)
    assert Publication.objects.count() == 1
    assert len(_registry_entries(frozen)) == 1


def test_a_withdrawn_version_cannot_be_published(frozen, study_pi):
    version_withdraw(version=frozen, user=study_pi, reason="A mistake in the key.")
    with pytest.raises(ValidationError, match="withdrawn"):
        version_publish(version=frozen, user=study_pi)


def test_the_embargo_ends_by_itself_on_its_day_once(frozen, study_pi, monkeypatch):
    day = today_utc() + timedelta(days=10)
    publication = version_publish(version=frozen, user=study_pi, embargo_until=day)
    assert embargoes_end() == []  # the beat task, before the day
    publication.refresh_from_db()
    assert not publication.is_public

    # Move the clock to the embargo's day.
    moved = datetime.combine(day, datetime.min.time(), tzinfo=UTC) + timedelta(hours=1)
    monkeypatch.setattr(timezone, "now", lambda: moved)
    assert embargoes_end() == [publication.pk]
    publication.refresh_from_db()
    assert publication.public_since == moved
    # Idempotent: a second run (or a second worker) changes and logs nothing.
    assert embargoes_end() == []
    assert embargoes_end_due(today=day + timedelta(days=5)) == []
    ended = _registry_entries(frozen)[1:]
    assert len(ended) == 1
    assert ended[0].actor_name == "system"
    assert "ended on its day" in ended[0].rationale


def test_the_pi_may_end_an_embargo_early_but_not_twice(frozen, study_pi):
    publication = version_publish(
        version=frozen, user=study_pi, embargo_until=today_utc() + timedelta(days=300)
    )
    embargo_end(publication=publication, user=study_pi)
    assert publication.is_public
    with pytest.raises(ValidationError, match="already public"):
        embargo_end(publication=publication, user=study_pi)
    assert len(_registry_entries(frozen)) == 2
    assert embargoes_end_due(today=publication.embargo_until) == []
