"""The calibration table comes from the runs that assert the targets: each design computed once.

Every calibration test hands its figures to the ``calibration_table`` fixture. At the end of
the session the rows are printed in the tests' own order, and with
``--calibration-docs=docs/analysis.md`` (``make calibrate``) they replace the table between
``<!-- calibration-table:begin -->`` and ``<!-- calibration-table:end -->`` in that file. A row
is recorded before its test asserts, so a design that misses its target is still in the table.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.calibration.designs import Coverage

BEGIN, END = "<!-- calibration-table:begin -->", "<!-- calibration-table:end -->"
COVERAGE_HEADER = (
    "| design | method | coverage % | MC SE | misses low / high % | runs |\n"
    "|---|---|---|---|---|---|"
)
DECISION_HEADER = "| truth (β_A, β_B) | findings (share of runs) |\n|---|---|"
ACCEPTANCE_HEADER = (
    "| design | floor met (lower bound ≥ truth) | ceiling met (exact upper bound ≤ truth) "
    "| rung accepted | runs |\n|---|---|---|---|---|"
)
_ROWS = pytest.StashKey[dict[str, list[tuple[str, str]]]]()
_ITEMS = pytest.StashKey[list[pytest.Item]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--calibration-docs",
        default=None,
        help="write the calibration table into this Markdown file, between its markers",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_ROWS] = {}


@pytest.fixture
def calibration_table(request: pytest.FixtureRequest):
    """``record(result)``: keep a Coverage (or a decision row's text, or with
    ``kind="acceptance"`` an acceptance row's) for the table."""
    rows = request.config.stash[_ROWS].setdefault(request.node.nodeid, [])

    def record(result: Coverage | str, kind: str = "decision") -> None:
        if isinstance(result, Coverage):
            rows.append(("coverage", result.row()))
        else:
            rows.append((kind, result))
        print(rows[-1][1], flush=True)  # seen as it comes with -s: a long run shows progress

    return record


def table(config: pytest.Config, items: list[pytest.Item]) -> str:
    recorded = config.stash[_ROWS]
    ordered = [row for item in items for row in recorded.get(item.nodeid, [])]
    coverage = [text for kind, text in ordered if kind == "coverage"]
    decision = [text for kind, text in ordered if kind == "decision"]
    acceptance = [text for kind, text in ordered if kind == "acceptance"]
    parts = []
    if coverage:
        parts.append("\n".join([COVERAGE_HEADER, *coverage]))
    if decision:
        parts.append(
            "The decision table (OPB-01 §8, the interval criterion, ε = 0.15 logit per level, "
            "10 items per family, item random slope SD 0.2, analytic intervals):\n\n"
            + "\n".join([DECISION_HEADER, *decision])
        )
    if acceptance:
        parts.append(
            "CRUCIBLE's acceptance verdict for a rung exactly at its policy's limits (a floor on "
            "the axis interval's lower bound, a hard-fail rate ceiling; issue #36 §3): a "
            "verdict that accepts it is a false acceptance, at most 2.5 % for the floor and "
            "5 % for the ceiling by the bounds' levels:\n\n"
            + "\n".join([ACCEPTANCE_HEADER, *acceptance])
        )
    return "\n\n".join(parts)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    config.stash[_ITEMS] = list(items)


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    text = table(config, config.stash.get(_ITEMS, []))
    if not text:
        return
    terminalreporter.section("calibration table")
    terminalreporter.write_line(text)
    target = config.getoption("--calibration-docs")
    if target:
        path = Path(target)
        document = path.read_text()
        pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
        if not pattern.search(document):
            raise pytest.UsageError(f"{path} has no {BEGIN} … {END} block for the table")
        path.write_text(pattern.sub(lambda _: f"{BEGIN}\n{text}\n{END}", document, count=1))
        terminalreporter.write_line(f"written to {path}")
