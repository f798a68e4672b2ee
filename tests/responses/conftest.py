"""A small study for the response tests: ``tests.factories``' draft (items × levels with keys, a
roster, the plan's seed and repetitions), frozen through the real freeze gate; its CSVs are
``answer_rows`` and ``csv_bytes`` there."""

import pytest

from tests.factories import build_draft, freeze


@pytest.fixture
def frozen(protocol, pi):
    """A frozen version: 3 items at L0, evaluands alpha and beta, 1 repetition."""
    return freeze(build_draft(protocol=protocol, user=pi), pi)
