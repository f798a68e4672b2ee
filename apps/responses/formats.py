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

Rows are numbered by the frame every import shares (``apps.protocols.import_frame.numbered``),
and a problem has its shape (``ImportProblem``). No ORM: the readers are plain functions over
bytes, or over an ``Opener`` that reads a file from its start (``stream_file``: records one at
a time, for large files).
"""

import codecs
import contextlib
import csv
import functools
import hashlib
import io
import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from apps.core.inputs import csv_width_problem, json_problem, whole_number
from apps.protocols.import_frame import NO_RECORDS, ImportProblem, ImportRejected, numbered
from apps.responses.archives import (
    ZIP_MAGIC,
    archive_problems,
    inspect_json_max_mb,
    inspect_sample_max_mb,
)

# A completion can be long; the csv module's default field limit (128 KiB) is not a limit on
# what a model may answer.
_CSV_FIELD_LIMIT = 16 * 1024 * 1024


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


# Where a file's bytes come from: every reader pass opens a fresh binary stream, so a file on
# disk (an upload spooled to a temporary file, a staged preview) is read again rather than held
# in memory. ``source_opener`` makes one from bytes, a path or a Django upload.
Opener = Callable[[], BinaryIO]


def source_opener(data: Any) -> Opener:
    """A function that opens ``data`` for reading from its start, each time it is called.

    ``data`` is ``bytes``, a path (``str`` or ``os.PathLike``), or an uploaded file: one spooled
    to disk (Django's ``TemporaryUploadedFile``) is reopened by its path; any other file object
    is read into memory once (Django keeps only small uploads in memory).
    """
    if isinstance(data, bytes | bytearray | memoryview):
        content = bytes(data)
        return lambda: io.BytesIO(content)
    if isinstance(data, str | os.PathLike):
        path = os.fspath(data)
        return lambda: open(path, "rb")
    if hasattr(data, "temporary_file_path"):
        path = data.temporary_file_path()
        return lambda: open(path, "rb")
    if hasattr(data, "seek"):
        data.seek(0)
    content = data.read()
    return lambda: io.BytesIO(content)


def source_sha256(opener: Opener) -> str:
    """The SHA-256 (hex) of the source's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with opener() as stream:
        while block := stream.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _lines(stream: BinaryIO, newline: str) -> io.TextIOWrapper:
    # Decoded line by line as it is read: a whole-file str (and io.StringIO's wide buffer)
    # would hold several copies of a large file at once.
    return io.TextIOWrapper(stream, encoding="utf-8-sig", newline=newline)


def _not_utf8(data: bytes | Opener) -> FileUnreadable:
    # Only on this error path is the file decoded from its start, to say where it goes wrong;
    # block by block, so a large file is not held whole.
    opener = data if callable(data) else source_opener(data)
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = lines = 0
    with opener() as stream:
        while True:
            block = stream.read(1 << 20)
            pending = len(decoder.getstate()[0])
            try:
                decoder.decode(block, final=not block)
            except UnicodeDecodeError as error:
                # The error's position counts the bytes the decoder held back from the block
                # before (an unfinished character).
                bad = offset - pending + error.start
                lines += block[: max(0, bad - offset)].count(b"\n")
                offset = bad
                break
            if not block:
                break
            lines += block.count(b"\n")
            offset += len(block)
    return FileUnreadable(
        [
            ImportProblem(
                None,
                "",
                f"the file is not UTF-8 text: byte {offset} (line {lines + 1}) cannot be decoded",
            )
        ]
    )


@dataclass
class SourceStream:
    """A file's records read lazily, one at a time: ``records`` yields each ``SourceRecord``;
    reading problems (a row with the wrong number of fields, a line that is not JSON) are
    appended to ``problems`` as they are met and are complete once ``records`` is exhausted.
    ``columns`` is the CSV header (None for other formats), ``header`` the log's header
    (Inspect AI). Raises ``FileUnreadable`` from ``records`` when the file is not UTF-8."""

    format: str
    records: Iterator[SourceRecord]
    problems: list[ImportProblem]
    columns: list[str] | None = None
    header: dict[str, Any] = field(default_factory=dict)


def _csv_records(
    reader, columns: list[str], problems: list[ImportProblem], opener: Opener, stream: BinaryIO
) -> Iterator[SourceRecord]:
    row = 1  # the header
    try:
        for row, values in numbered(reader, header=True):
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
            yield SourceRecord(row=row, fields=fields, raw=fields)
    except csv.Error as error:
        problems.append(ImportProblem(row + 1, "", f"cannot be read as CSV: {error}"))
    except UnicodeDecodeError as error:
        raise _not_utf8(opener) from error
    finally:
        stream.close()


def stream_csv(opener: Opener) -> SourceStream:
    """Open a CSV file with a header row; every data row becomes one record, read lazily.

    Raises ``FileUnreadable`` at once for an empty file or a bad header."""
    csv.field_size_limit(_CSV_FIELD_LIMIT)
    stream = opener()
    reader = csv.reader(_lines(stream, newline=""))
    try:
        columns = next(reader)
    except StopIteration:
        stream.close()
        raise FileUnreadable([ImportProblem(None, "", "the file is empty")]) from None
    except csv.Error as error:
        stream.close()
        raise FileUnreadable([ImportProblem(None, "header", str(error))]) from error
    except UnicodeDecodeError as error:
        stream.close()
        raise _not_utf8(opener) from error
    if problem := csv_width_problem(columns):
        stream.close()
        raise FileUnreadable([ImportProblem(None, "header", problem)])
    problems = []
    seen = set()
    for position, name in enumerate(columns, start=1):
        if not name.strip():
            problems.append(ImportProblem(None, "header", f"column {position} has no name"))
        elif name in seen:
            problems.append(ImportProblem(None, "header", f"column {name!r} appears twice"))
        seen.add(name)
    if problems:
        stream.close()
        raise FileUnreadable(problems)
    problems = []
    return SourceStream(
        format="csv",
        records=_csv_records(reader, columns, problems, opener, stream),
        problems=problems,
        columns=columns,
    )


def _materialise(source: SourceStream) -> SourceFile:
    records = list(source.records)
    if source.problems:
        raise FileUnreadable(source.problems)
    return SourceFile(
        format=source.format, records=records, columns=source.columns, header=source.header
    )


def read_csv(data: bytes) -> SourceFile:
    """Read a CSV file with a header row; every data row becomes one record."""
    return _materialise(stream_csv(source_opener(data)))


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON value")


def _jsonl_records(opener: Opener, problems: list[ImportProblem]) -> Iterator[SourceRecord]:
    with opener() as stream:
        lines = numbered(_lines(stream, newline="\n"), header=False)
        line_number = 0
        while True:
            try:
                line_number, line = next(lines)
            except StopIteration:
                break
            except UnicodeDecodeError as error:
                raise _not_utf8(opener) from error
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
            # A lone surrogate (a key or a value) or a deep value cannot be stored or hashed.
            if found := json_problem(value):
                problems.append(ImportProblem(line_number, found[0], found[1]))
                continue
            yield SourceRecord(row=line_number, fields=value, raw=value)


def stream_jsonl(opener: Opener) -> SourceStream:
    """Open a JSON Lines file (one JSON object per line); its records are read lazily."""
    problems: list[ImportProblem] = []
    return SourceStream(format="jsonl", records=_jsonl_records(opener, problems), problems=problems)


def read_jsonl(data: bytes) -> SourceFile:
    """Read a JSON Lines file: one JSON object per line."""
    return _materialise(stream_jsonl(source_opener(data)))


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


def _inspect_record(row: int, sample, model: str) -> SourceRecord:
    # ``sample`` is an EvalSample, or a subset of its fields (``_sample_subset``): the record
    # then holds those fields, and ``completion`` and ``terminal_outcome`` when read.
    raw = sample.model_dump(mode="json")
    fields = {**raw, "model": model}
    declared = type(sample).model_fields
    if "output" in declared:
        fields["completion"] = sample.output.completion if sample.output is not None else ""
    if all(name in declared for name in _DERIVED_FIELDS["terminal_outcome"]):
        fields["terminal_outcome"] = inspect_terminal_outcome(sample)
    return SourceRecord(
        row=row, fields=fields, raw=raw, label=f"sample {sample.id}, epoch {sample.epoch}"
    )


def _inspect_header(log) -> dict[str, Any]:
    return {
        "eval_id": log.eval.eval_id,
        "run_id": log.eval.run_id,
        "task": log.eval.task,
        "model": log.eval.model,
        "created": log.eval.created,
        "status": log.status,
        "packages": dict(log.eval.packages or {}),
        # What the log records of its scorers (appended ones too): name and parameters, and
        # the models it gave roles (a grader's), checked against a scorer's frozen identity.
        "scorers": [
            {"name": s.name, "options": dict(s.options or {})} for s in log.eval.scorers or []
        ],
        "model_roles": {
            role: config.model for role, config in (log.eval.model_roles or {}).items()
        },
    }


def _not_a_log(error: Exception) -> FileUnreadable:
    message = str(error).splitlines()[0] if str(error) else type(error).__name__
    return FileUnreadable([ImportProblem(None, "", f"not an Inspect AI log: {message}")])


def _sample_order(name: str) -> tuple[int, str]:
    # samples/<id>_epoch_<n>.json, ordered as inspect_ai's own reader orders them (epoch, id).
    stem = name[len("samples/") : -len(".json")]
    sample_id, _, epoch = stem.rpartition("_epoch_")
    return (
        whole_number(epoch) or 0,
        sample_id.zfill(20) if sample_id.isdigit() else sample_id,
    )


def _eval_sample_entries(archive: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    """The ``samples/*.json`` entries of an ``.eval`` archive (the last of a repeated name, as
    inspect_ai reads them), in its order; raises ``FileUnreadable`` naming a sample larger than
    ``INSPECT_SAMPLE_MAX_MB``, checked from the directory before any sample is inflated."""
    limit = inspect_sample_max_mb() * 2**20
    entries = {
        entry.filename: entry
        for entry in archive.infolist()
        if entry.filename.startswith("samples/") and entry.filename.endswith(".json")
    }
    too_large = [
        ImportProblem(
            None,
            "",
            f"the log's {name!r} holds {entry.file_size / 2**20:.1f} MiB; a sample may hold at "
            f"most {inspect_sample_max_mb()} MiB",
        )
        for name, entry in entries.items()
        if entry.file_size > limit
    ]
    if too_large:
        raise FileUnreadable(too_large[:10])
    return sorted(entries.values(), key=lambda entry: _sample_order(entry.filename))


# Top-level keys of samples written by older inspect_ai, which ``EvalSample`` migrates.
_DEPRECATED_KEYS = ("score", "transcript")
# What a record holds beside the sample's own fields, and the sample fields each is made from.
_DERIVED_FIELDS = {
    "model": (),
    "completion": ("output",),
    "terminal_outcome": ("error", "limit", "output"),
}


@functools.cache
def _sample_subset(names: frozenset[str]) -> Any:
    """A pydantic model of the ``EvalSample`` fields ``names`` only, each declared exactly as
    inspect_ai declares it (same type, default and validators), its other fields ignored: the
    JSON parser skips them without building a Python object."""
    from inspect_ai.log import EvalSample
    from pydantic import ConfigDict, Field, create_model

    declared = EvalSample.model_fields
    definitions: dict[str, Any] = {
        name: (declared[name].annotation, declared[name]) for name in sorted(names)
    }
    # Keys inspect_ai migrates (``EvalSample.migrate_deprecated``): a sample that has one is
    # read whole, by inspect_ai.
    definitions.update(
        {name: (Any, Field(default=None, exclude=True)) for name in _DEPRECATED_KEYS}
    )
    return create_model(
        "EvalSampleSubset",
        __config__=ConfigDict(protected_namespaces=(), ser_json_inf_nan="constants"),
        **definitions,
    )


def inspect_sample_fields(keys: Iterable[str]) -> frozenset[str] | None:
    """The ``EvalSample`` fields a reader needs to give a record the top-level ``keys`` (a
    sample's own fields, and ``model``, ``completion``, ``terminal_outcome``): always ``id``
    and ``epoch``, which label a record. None when only the whole sample will do (a key
    inspect_ai resolves against the rest of the sample: ``timelines``)."""
    from inspect_ai.log import EvalSample

    names = {"id", "epoch"}
    for key in keys:
        names.update(_DERIVED_FIELDS.get(key, ()))
        if key in EvalSample.model_fields:
            names.add(key)
    if "timelines" in names:
        return None
    return frozenset(names)


def _subset_sample(data: bytes, fields: frozenset[str]) -> Any | None:
    """The sample ``data`` (a JSON entry of an ``.eval`` archive) read as ``_sample_subset``;
    None when the subset cannot read it (a sample written before ``scores`` replaced
    ``score``, JSON that is not valid, a text the JSON parser refuses such as a lone
    surrogate), which the whole sample's reader then reads, or refuses, as it always has."""
    import pydantic
    from inspect_ai._util.constants import get_deserializing_context

    try:
        sample = _sample_subset(fields).model_validate_json(
            data, context=get_deserializing_context()
        )
    except (pydantic.ValidationError, ValueError):
        return None
    if any(getattr(sample, name) is not None for name in _DEPRECATED_KEYS):
        return None
    return sample


def _eval_records(
    archive: zipfile.ZipFile,
    entries: list[zipfile.ZipInfo],
    model: str,
    cleanup: Callable[[], None],
    fields: frozenset[str] | None = None,
) -> Iterator[SourceRecord]:
    from inspect_ai._util.constants import get_deserializing_context
    from inspect_ai.log import EvalSample

    try:
        for row, entry in numbered(entries, header=False):
            try:
                data = archive.read(entry)
                sample = None if fields is None else _subset_sample(data, fields)
                if sample is None:
                    sample = EvalSample.model_validate(
                        json.loads(data), context=get_deserializing_context()
                    )
            except Exception as error:  # pydantic, zlib, JSON: each means "not a sample"
                raise _not_a_log(error) from error
            record = _inspect_record(row, sample, model)
            del sample, data  # one sample in memory at a time
            if found := json_problem(record.raw):
                raise FileUnreadable([ImportProblem(row, found[0], found[1], record.label)])
            yield record
    finally:
        cleanup()


def stream_inspect(opener: Opener, keys: Iterable[str] | None = None) -> SourceStream:
    """Open an Inspect AI log (``.eval`` or ``.json``); an ``.eval`` log's samples are read one at
    a time, so memory is bounded by the largest sample, never by the log.

    Each sample × epoch becomes one record. Its fields are the sample as Inspect writes it, plus
    ``model`` (the log's model), ``completion`` (the output's text) and ``terminal_outcome``
    (derived by ``inspect_terminal_outcome``). Its raw record is the sample alone.

    ``keys`` (None: all) names the top-level fields a reader will use (a machine-score import
    uses ``id``, ``epoch``, ``scores`` and what its mapping names): each ``.eval`` sample is
    then read for those fields alone (``inspect_sample_fields``), each validated as inspect_ai
    validates it, the rest of the sample parsed but neither validated nor kept, and the check
    of the text kept (``json_problem``) applies to what is kept. A sample the subset cannot
    read is read whole, as without ``keys``. A ``.json`` log is always read whole.

    Limits (settings), checked before anything is inflated: the archive's (``archive_problems``:
    total, entries, ratio); each sample's declared size (``INSPECT_SAMPLE_MAX_MB``); a ``.json``
    log, which inspect_ai can only read whole, at most ``INSPECT_JSON_MAX_MB``. Raises
    ``FileUnreadable`` for each, and for a file that is not a log.
    """
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise FileUnreadable([ImportProblem(None, "format", INSPECT_MISSING)]) from None
    # inspect_ai reads from a path: the upload is copied to a temporary file block by block.
    handle = tempfile.NamedTemporaryFile(suffix=".log", delete=False)  # noqa: SIM115 (closed in cleanup)
    archive: zipfile.ZipFile | None = None
    try:
        with opener() as stream:
            shutil.copyfileobj(stream, handle, 1 << 20)
        handle.close()
        size = os.path.getsize(handle.name)
        with open(handle.name, "rb") as stream:
            magic = stream.read(4)
        if magic == ZIP_MAGIC:
            with open(handle.name, "rb") as stream:
                too_large = archive_problems(stream)
            if too_large:
                raise FileUnreadable([ImportProblem(None, "", problem) for problem in too_large])
            path = f"{handle.name}.eval"
            os.rename(handle.name, path)
            handle.name = path  # type: ignore[misc]  # removed under this name in cleanup
            try:
                log = read_eval_log(path, header_only=True)
                # One reading of the archive's directory for every sample (25,000 entries: a
                # third of a second each time it is read).
                archive = zipfile.ZipFile(path)
                entries = _eval_sample_entries(archive)
            except FileUnreadable:
                raise
            except Exception as error:  # inspect_ai raises many kinds; each means "not a log"
                raise _not_a_log(error) from error
            if not entries:
                raise FileUnreadable(
                    [
                        ImportProblem(
                            None, "", "the log holds no samples (was it written with samples?)"
                        )
                    ]
                )
            opened = archive

            def cleanup() -> None:
                opened.close()
                _remove(path)

            fields = None if keys is None else inspect_sample_fields(keys)
            records = _eval_records(archive, entries, log.eval.model, cleanup, fields)
            return SourceStream(
                format="inspect", records=records, problems=[], header=_inspect_header(log)
            )
        if size > inspect_json_max_mb() * 2**20:
            raise FileUnreadable(
                [
                    ImportProblem(
                        None,
                        "",
                        f"a .json Inspect AI log is read whole and may be at most "
                        f"{inspect_json_max_mb()} MiB; this one is {size / 2**20:.1f} MiB: "
                        "import the .eval log instead",
                    )
                ]
            )
        path = f"{handle.name}.json"
        os.rename(handle.name, path)
        handle.name = path  # type: ignore[misc]
        try:
            log = read_eval_log(path)
        except Exception as error:
            raise _not_a_log(error) from error
        samples = log.samples or []
        if not samples:
            raise FileUnreadable(
                [ImportProblem(None, "", "the log holds no samples (was it written with samples?)")]
            )
        model = log.eval.model
        whole = [
            _inspect_record(row, sample, model) for row, sample in numbered(samples, header=False)
        ]
        _remove(path)
        return SourceStream(
            format="inspect", records=iter(whole), problems=[], header=_inspect_header(log)
        )
    except BaseException:
        if archive is not None:
            archive.close()
        handle.close()
        _remove(handle.name)
        raise


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


def read_inspect(data: bytes, keys: Iterable[str] | None = None) -> SourceFile:
    """Read a whole Inspect AI log (``.eval`` or ``.json``): ``stream_inspect``'s records, kept
    (``keys``: the fields to read of each sample, as ``stream_inspect`` says; None: all)."""
    return _materialise(stream_inspect(source_opener(data), keys))


def stream_file(data: Any, format: str) -> SourceStream:
    """Open ``data`` (bytes, a path, an upload or an ``Opener``) as ``format`` (``csv``,
    ``jsonl`` or ``inspect``), its records read lazily: CSV and JSON Lines row by row, so
    memory does not grow with the file; an Inspect AI log whole (inspect_ai reads it whole,
    after ``archive_problems`` has bounded its size)."""
    opener = data if callable(data) else source_opener(data)
    if format == "csv":
        return stream_csv(opener)
    if format == "jsonl":
        return stream_jsonl(opener)
    if format == "inspect":
        return stream_inspect(opener)
    raise FileUnreadable(
        [ImportProblem(None, "format", f"{format!r} is not one of csv, jsonl, inspect")]
    )


def read_file(data: bytes, format: str, keys: Iterable[str] | None = None) -> SourceFile:
    """Read ``data`` as ``format`` (``csv``, ``jsonl`` or ``inspect``); ``keys`` names the fields
    of an Inspect AI sample to read (``stream_inspect``; None: all), and is ignored by the
    other formats, whose rows are read whole."""
    readers: dict[str, Callable[[bytes], SourceFile]] = {
        "csv": read_csv,
        "jsonl": read_jsonl,
        "inspect": lambda data: read_inspect(data, keys),
    }
    if format not in readers:
        raise FileUnreadable(
            [ImportProblem(None, "format", f"{format!r} is not one of csv, jsonl, inspect")]
        )
    return readers[format](data)


def file_format(format: str | None, filename: str) -> str:
    """``format`` when given, else the one ``filename`` names (csv, jsonl, inspect); raises
    ``ImportRejected`` (field ``format``) when neither says."""
    found = format or guess_format(filename)
    if found is None:
        message = f"say which format {filename!r} is: csv, jsonl or inspect"
        raise ImportRejected([ImportProblem(None, "format", message)])
    return found


def file_records(data: bytes, format: str, keys: Iterable[str] | None = None) -> SourceFile:
    """The whole file read as ``format`` (``keys``: as ``read_file`` says); raises
    ``ImportRejected`` with every unreadable row, or when the file holds no records."""
    try:
        source = read_file(data, format, keys)
    except FileUnreadable as error:
        raise ImportRejected(error.problems) from error
    if not source.records:
        raise ImportRejected([NO_RECORDS])
    return source
