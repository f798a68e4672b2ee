"""The frozen rating cache (apps/raters/frozen.py): a frozen version's plan and rubric are read
once per process, whether asked by hash or by id alone; a draft's are read every time."""

import pytest

from apps.raters.frozen import frozen_rating
from apps.raters.services import rubric_apply_template
from apps.raters.values import reviewer_values
from tests.factories import ProtocolVersionFactory, frozen_study

pytestmark = pytest.mark.django_db


def test_a_frozen_versions_rating_is_read_once_even_when_asked_by_id(
    django_assert_max_num_queries,
):
    version = frozen_study(responses=1).version
    first = frozen_rating(version_id=version.pk)
    with django_assert_max_num_queries(0):
        assert frozen_rating(version_id=version.pk) is first
        assert frozen_rating(version_id=version.pk, sha256=version.sha256) is first
        # What a reviewer is shown of their own score needs no query either.
        assert reviewer_values({"label": "comply"}, version_id=version.pk) == {"label": "comply"}


def test_a_drafts_rating_is_read_again_each_time():
    draft = ProtocolVersionFactory()
    rubric_apply_template(version=draft, template="xstest")
    first = frozen_rating(version_id=draft.pk)
    assert frozen_rating(version_id=draft.pk) is not first


def test_a_hash_that_is_not_the_versions_is_not_cached():
    version = frozen_study(responses=1).version
    wrong = "0" * 64
    assert frozen_rating(version_id=version.pk, sha256=wrong) is not frozen_rating(
        version_id=version.pk, sha256=wrong
    )
