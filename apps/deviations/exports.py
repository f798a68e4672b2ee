"""The log's exports: JSONL (exact, verifiable offline) and CSV (for reading in a spreadsheet)."""

import csv
import io
from collections.abc import Iterable, Iterator

from apps.deviations.chain import canonical_json, entry_line
from apps.deviations.entries import ENTRY_FIELDS

# CSV columns: the entry's fields in reading order, refs as canonical JSON text.
CSV_COLUMNS = ENTRY_FIELDS

# A cell a spreadsheet would evaluate as a formula (CWE-1236). Rationales are typed by people
# whose log an auditor opens; such cells get a leading apostrophe in the CSV only.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def jsonl_lines(entries: Iterable[dict]) -> Iterator[str]:
    """One canonical JSON line per entry, newline-terminated (UTF-8 when encoded)."""
    for entry in entries:
        yield entry_line(entry) + "\n"


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return canonical_json(value).decode("utf-8")
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def csv_lines(entries: Iterable[dict]) -> Iterator[str]:
    """A header row, then one row per entry (RFC 4180 quoting, CRLF line ends)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def flush() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    writer.writerow(CSV_COLUMNS)
    yield flush()
    for entry in entries:
        writer.writerow([_cell(entry[column]) for column in CSV_COLUMNS])
        yield flush()
