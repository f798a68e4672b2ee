"""The benchmarks' size setting and marker.

Every test here is marked ``benchmark``. ``BENCHMARK_SIZE=tiny`` runs each once at a tiny size
(``make benchmarks-tiny``, about 4½ minutes; run it before a change lands, so that none rots
unnoticed: CI does not, since a measurement on a shared machine is not a pass or a fail); its
figures mean nothing.
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


def backend_pid(connection) -> int | None:
    """The process id of the PostgreSQL backend serving ``connection`` (None on SQLite)."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def process_cpu_seconds(pid: int | None) -> float:
    """The CPU time (user + system, seconds, in clock ticks of 10 ms) process ``pid`` has used,
    from ``/proc/<pid>/stat``: for a PostgreSQL backend, the database's share of a benchmark's
    work, which a loaded machine inflates far less than wall time. 0.0 where it cannot be read
    (no pid, another host, no /proc): a figure printed as 0 was not measured."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def backend_cpu_seconds(connection) -> float:
    """``process_cpu_seconds`` of ``connection``'s PostgreSQL backend."""
    return process_cpu_seconds(backend_pid(connection))
