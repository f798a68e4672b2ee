"""A small study for the response tests: ``tests.builders``' draft (items × levels with keys, a
roster, the plan's seed and repetitions), frozen through the real freeze gate; and its CSVs."""

import csv
import io

import pytest

from apps.responses.models import Administration
from tests.builders import build_draft, freeze


def schedule_rows(version):
    """``(item, level, evaluand code, repetition)`` of every administration, in position order."""
    codes = {e.evaluand_id: e.code for e in version.roster.all()}
    return [
        (a.cell.item.code, a.cell.level.code, codes[a.evaluand_id], a.repetition)
        for a in Administration.objects.filter(version=version)
        .select_related("cell__item", "cell__level")
        .order_by("position")
    ]


def csv_bytes(rows: list[dict], columns: list[str] | None = None) -> bytes:
    columns = columns or list(rows[0])
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def answer_rows(version, *, outcome: str = "completed") -> list[dict]:
    """One CSV row per administration, in schedule order, answering each."""
    return [
        {
            "item": item,
            "level": level,
            "evaluand": code,
            "repetition": repetition,
            "terminal_outcome": outcome,
            "response": f"An answer to {item} at {level} from {code}.",
        }
        for item, level, code, repetition in schedule_rows(version)
    ]


@pytest.fixture
def frozen(protocol, pi):
    """A frozen version: 3 items at L0, evaluands alpha and beta, 1 repetition."""
    return freeze(build_draft(protocol=protocol, user=pi), pi)
