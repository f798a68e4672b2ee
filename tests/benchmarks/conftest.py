"""The benchmarks' size setting and marker.

Every test here is marked ``benchmark``. ``BENCHMARK_SIZE=tiny`` runs each once at a tiny size
(``make benchmarks-tiny``, which CI runs) so that none rots unnoticed; its figures mean nothing.
The recorded figures (docs/performance.md) come from the full size, the default
(``make benchmarks``).
"""

import os

import pytest

TINY = os.environ.get("BENCHMARK_SIZE", "full") == "tiny"


def sized(full: str, tiny: str) -> str:
    """``tiny`` under ``BENCHMARK_SIZE=tiny``, else ``full`` (strings, as the environment gives)."""
    return tiny if TINY else full


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.path).startswith(here):
            item.add_marker(pytest.mark.benchmark)
