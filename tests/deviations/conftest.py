"""Fixtures for the deviation log: a frozen version and a way to append entries."""

import pytest
from django.db import transaction

from apps.deviations.services import deviation_append
from tests.factories import FrozenVersionFactory


@pytest.fixture
def frozen_version(protocol):
    return FrozenVersionFactory(protocol=protocol, label="1.0")


@pytest.fixture
def append(pi):
    """``append(protocol, n=1, **fields)``: n entries, each in its own transaction."""

    def _append(protocol, n=1, **fields):
        entries = []
        for _ in range(n):
            values = {
                "kind": "deviation",
                "rationale": f"Entry {len(entries) + 1}: déviation notée — «ok» ✓",
                "actor": pi,
                "refs": [{"type": "version", "id": 1, "label": "Ünïcode v1.0"}],
                **fields,
            }
            with transaction.atomic():
                entries.append(deviation_append(protocol=protocol, **values))
        return entries

    return _append
