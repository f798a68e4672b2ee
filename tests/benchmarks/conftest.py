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


def meets(figure: float, *, at_most: float | None = None, at_least: float | None = None) -> bool:
    """Whether a full-size figure meets its target; always true at the tiny size, whose figures mean
    nothing (a 500-entry run measures interpreter warm-up, not throughput)."""
    if TINY:
        return True
    if at_most is not None and figure > at_most:
        return False
    return at_least is None or figure >= at_least


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.path).startswith(here):
            item.add_marker(pytest.mark.benchmark)
