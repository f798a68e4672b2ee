"""PostgreSQL keeps a public version public: a publication is never deleted, once public never
changes, and under embargo may only become public (BRIEF invariant 6, at the database level)."""

from datetime import timedelta

import pytest
from django.db import DatabaseError, connection, transaction

from apps.registry.models import Publication, RunPublication
from apps.registry.services import today_utc, version_publish
from tests.dbroles import assert_sql_refused

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def test_a_public_version_can_never_be_made_private_again(frozen, study_pi):
    publication = version_publish(version=frozen, user=study_pi)
    pk = publication.pk
    assert_sql_refused("UPDATE registry_publication SET public_since = NULL WHERE id = %s", [pk])
    assert_sql_refused(
        "UPDATE registry_publication SET embargo_until = CURRENT_DATE + 30 WHERE id = %s", [pk]
    )
    assert_sql_refused("UPDATE registry_publication SET authors = 'x' WHERE id = %s", [pk])
    assert_sql_refused("DELETE FROM registry_publication WHERE id = %s", [pk])
    with pytest.raises(DatabaseError, match="preregistry:"), transaction.atomic():
        Publication.objects.filter(pk=pk).update(public_since=None)
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    assert_sql_refused("TRUNCATE registry_publication CASCADE", [])
    publication.refresh_from_db()
    assert publication.is_public


def test_an_embargo_may_only_end_never_be_extended_or_moved(frozen, study_pi):
    publication = version_publish(
        version=frozen, user=study_pi, embargo_until=today_utc() + timedelta(days=30)
    )
    pk = publication.pk
    assert_sql_refused(
        "UPDATE registry_publication SET embargo_until = embargo_until + 3650 WHERE id = %s", [pk]
    )
    assert_sql_refused(
        "UPDATE registry_publication SET public_since = now(), embargo_until = NULL WHERE id = %s",
        [pk],
    )
    # Becoming public, and nothing else, is the one change allowed.
    assert Publication.objects.filter(pk=pk).update(public_since=publication.published_at) == 1


def test_a_published_run_is_never_unpublished(frozen, study_pi):
    # No run is needed to prove the table append-only: the refusal comes before any row is read.
    assert_sql_refused("DELETE FROM registry_runpublication", [])
    assert_sql_refused("UPDATE registry_runpublication SET published_at = now()", [])
    assert RunPublication.objects.count() == 0
