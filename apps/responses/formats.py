"""Reading response files into records: CSV, JSON Lines and Inspect AI logs.

Each reader turns the file's bytes into ``SourceRecord``s — the record's addressable ``fields``
(what a column mapping can name), the record exactly as received (``raw``) and its number
(``row``) — or raises ``FileUnreadable`` with every problem it found. What "row" means per format
is part of ``docs/import-formats.md``:

- CSV: the row as a spreadsheet shows it, as in the design import: the header is row 1, the
  first data row row 2 (a record whose quoted text spans several lines is still one row; a blank
  line is a row that holds nothing, skipped but counted);
- JSON Lines: the line number, 1-based (blank lines are skipped but counted, so the number is
  the one an editor shows);
- Inspect AI log: the sample's position in the log, 1-based, together with its id and epoch.

No Django imports: the readers are plain functions over bytes.
"""

import csv
import io
import json
import tempfile
from dataclasses import dataclass, field
from typing import Any

from apps.responses.archives import archive_problems

# A completion can be long; the csv module's default field limit (128 KiB) is not a limit on
# what a model may answer.
_CSV_FIELD_LIMIT = 16 * 1024 * 1024


@dataclass(frozen=True)
class ImportProblem:
    """One thing wrong with a file: where (row, field) and what."""

    row: int | None
    field: str
    message: str
    # How the record names itself, when more than its row helps (an Inspect sample's id, epoch).
    label: str = ""

    def __str__(self) -> str:
        where = f"row {self.row}" if self.row is not None else "file"
        if self.label:
            where = f"{where} ({self.label})"
        if self.field:
            return f"{where}, {self.field}: {self.message}"
        return f"{where}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {"row": self.row, "field": self.field, "message": self.message, "label": self.label}


class FileUnreadable(Exception):
    """The file cannot be read as the format says; ``problems`` says where and why."""

    def __init__(self, problems: list[ImportProblem]):
        super().__init__("; ".join(str(p) for p in problems[:3]))
        self.problems = problems


@dataclass(slots=True)
class SourceRecord:
    row: int
    fields: dict[str, Any]
    raw: Any
    label: str = ""


@dataclass
class SourceFile:
    format: str
    records: list[SourceRecord]
    # The header of a CSV file; None for formats whose records need not share their keys.
    columns: list[str] | None = None
    header: dict[str, Any] = field(default_factory=dict)


def guess_format(filename: str) -> str | None:
    """The format a file name suggests: .csv, .jsonl/.ndjson, .eval/.json (Inspect AI)."""
    name = filename.lower()
    if name.endswith(".csv"):
        return "csv"
    if name.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if name.endswith((".eval", ".json")):
        return "inspect"
    return None


def _lines(data: bytes, newline: str) -> io.TextIOWrapper:
    # Decoded line by line as it is read: a whole-file str (and io.StringIO's wide buffer)
    # would hold several copies of a large file at once.
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline=newline)


def _not_utf8(data: bytes) -> FileUnreadable:
    # Only on this error path is the whole file decoded at once, to say where it goes wrong.
    try:
        data.decode("utf-8-sig")
        offset = len(data)
    except UnicodeDecodeError as error:
        offset = error.start
    line = data[:offset].count(b"\n") + 1
    return FileUnreadable(
        [
            ImportProblem(
                None,
                "",
                f"the file is not UTF-8 text: byte {offset} (line {line}) cannot be decoded",
            )
        ]
    )


def read_csv(data: bytes) -> SourceFile:
    """Read a CSV file with a header row; every data row becomes one record."""
    csv.field_size_limit(_CSV_FIELD_LIMIT)
    reader = csv.reader(_lines(data, newline=""))
    try:
        columns = next(reader)
    except StopIteration:
        raise FileUnreadable([ImportProblem(None, "", "the file is empty")]) from None
    except csv.Error as error:
        raise FileUnreadable([ImportProblem(None, "header", str(error))]) from error
    except UnicodeDecodeError as error:
        raise _not_utf8(data) from error
    problems = []
    seen = set()
    for position, name in enumerate(columns, start=1):
        if not name.strip():
            problems.append(ImportProblem(None, "header", f"column {position} has no name"))
        elif name in seen:
            problems.append(ImportProblem(None, "header", f"column {name!r} appears twice"))
        seen.add(name)
    if problems:
        raise FileUnreadable(problems)
    records = []
    row = 1  # the header
    try:
        for row, values in enumerate(reader, start=2):
            if not values:
                continue
            if len(values) != len(columns):
                problems.append(
                    ImportProblem(
                        row, "", f"has {len(values)} fields; the header has {len(columns)}"
                    )
                )
                continue
            fields = dict(zip(columns, values, strict=True))
            records.append(SourceRecord(row=row, fields=fields, raw=fields))
    except csv.Error as error:
        problems.append(ImportProblem(row + 1, "", f"cannot be read as CSV: {error}"))
    except UnicodeDecodeError as error:
        raise _not_utf8(data) from error
    if problems:
        raise FileUnreadable(problems)
    return SourceFile(format="csv", records=records, columns=columns)


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON value")


def read_jsonl(data: bytes) -> SourceFile:
    """Read a JSON Lines file: one JSON object per line."""
    records, problems = [], []
    lines = enumerate(_lines(data, newline="\n"), start=1)
    line_number = 0
    while True:
        try:
            line_number, line = next(lines)
        except StopIteration:
            break
        except UnicodeDecodeError as error:
            raise _not_utf8(data) from error
        if not line.strip():
            continue
        try:
            value = json.loads(line, parse_constant=_refuse_constant)
        except json.JSONDecodeError as error:
            problems.append(
                ImportProblem(
                    line_number, "", f"not valid JSON: {error.msg} (column {error.colno})"
                )
            )
            continue
        except ValueError as error:
            problems.append(ImportProblem(line_number, "", f"not valid JSON: {error}"))
            continue
        except RecursionError:
            problems.append(ImportProblem(line_number, "", "not valid JSON: nested too deeply"))
            continue
        if not isinstance(value, dict):
            problems.append(ImportProblem(line_number, "", "is not a JSON object"))
            continue
        records.append(SourceRecord(row=line_number, fields=value, raw=value))
    if problems:
        raise FileUnreadable(problems)
    return SourceFile(format="jsonl", records=records)


def inspect_available() -> bool:
    """Whether the optional extra ``inspect`` (the ``inspect_ai`` package) is installed."""
    try:
        import inspect_ai.log  # noqa: F401
    except ImportError:
        return False
    return True


INSPECT_MISSING = (
    "reading Inspect AI logs needs the optional extra 'inspect' "
    "(pip install 'preregistry[inspect]'), which is not installed here"
)


def inspect_terminal_outcome(sample) -> str:
    """The terminal outcome an Inspect sample reports (see ``docs/import-formats.md``)."""
    if sample.error is not None:
        return "error"
    if sample.limit is not None:
        return "timeout" if sample.limit.type in ("time", "working") else "budget_exhausted"
    if sample.output is not None and sample.output.stop_reason == "content_filter":
        return "refused"
    return "completed"


def read_inspect(data: bytes) -> SourceFile:
    """Read an Inspect AI log (``.eval`` or ``.json``) with inspect_ai's own reader.

    Each sample × epoch becomes one record. Its fields are the sample as Inspect writes it, plus
    ``model`` (the log's model), ``completion`` (the output's text) and ``terminal_outcome``
    (derived by ``inspect_terminal_outcome``). Its raw record is the sample alone.
    """
    # Before any reader opens it: a compression bomb is refused from its directory alone.
    too_large = archive_problems(data)
    if too_large:
        raise FileUnreadable([ImportProblem(None, "", problem) for problem in too_large])
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise FileUnreadable([ImportProblem(None, "format", INSPECT_MISSING)]) from None
    # An .eval log is a zip archive; anything else is read as the .json log format.
    suffix = ".eval" if data[:4] == b"PK\x03\x04" else ".json"
    with tempfile.NamedTemporaryFile(suffix=suffix) as handle:
        handle.write(data)
        handle.flush()
        try:
            log = read_eval_log(handle.name)
        except Exception as error:  # inspect_ai raises many kinds; each means "not a log"
            message = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise FileUnreadable(
                [ImportProblem(None, "", f"not an Inspect AI log: {message}")]
            ) from error
    samples = log.samples or []
    if not samples:
        raise FileUnreadable(
            [ImportProblem(None, "", "the log holds no samples (was it written with samples?)")]
        )
    header = {
        "eval_id": log.eval.eval_id,
        "run_id": log.eval.run_id,
        "task": log.eval.task,
        "model": log.eval.model,
        "created": log.eval.created,
        "status": log.status,
        "packages": dict(log.eval.packages or {}),
    }
    records = []
    for row, sample in enumerate(samples, start=1):
        raw = sample.model_dump(mode="json")
        fields = {
            **raw,
            "model": log.eval.model,
            "completion": sample.output.completion if sample.output is not None else "",
            "terminal_outcome": inspect_terminal_outcome(sample),
        }
        records.append(
            SourceRecord(
                row=row,
                fields=fields,
                raw=raw,
                label=f"sample {sample.id}, epoch {sample.epoch}",
            )
        )
    return SourceFile(format="inspect", records=records, header=header)


def read_file(data: bytes, format: str) -> SourceFile:
    """Read ``data`` as ``format`` (``csv``, ``jsonl`` or ``inspect``)."""
    readers = {
        "csv": read_csv,
        "jsonl": read_jsonl,
        "inspect": read_inspect,
    }
    if format not in readers:
        raise FileUnreadable(
            [ImportProblem(None, "format", f"{format!r} is not one of csv, jsonl, inspect")]
        )
    return readers[format](data)
