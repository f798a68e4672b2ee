"""The frame every file import into a version shares: responses (``apps.responses.importing``),
machine scores (``apps.raters.machine_import``), an LLM judge's verdicts
(``apps.studies.fidelity.judge_import``) and design files (``apps.items.services.transfer``).

It lives with the versions, before every app that imports into one, so that all four use it.
Each import, whatever its rows hold:

1. refuses a version that takes no such file with a ValidationError (``version_require_open``
   for the imports into a frozen version; the design import wants a draft);
2. numbers its rows one way (``numbered``): a file with a header row (CSV) counts as a
   spreadsheet shows it, the header row 1 and the first record row 2; a file without one (JSON
   Lines, an Inspect AI log, a design file's JSON ``cells``) counts its records (or lines) from 1.
   A record whose quoted text spans several lines is still one row; a blank row is skipped but
   counted (``docs/import-formats.md``, "What row means");
3. reports every problem in one shape (``ImportProblem``: row, or None for the file as a whole;
   field; message; the record's own label), collected before it decides, and refuses the whole
   file when there is any (``ImportRejected``, listing the first 100 and counting the rest),
   writing nothing. A row is checked in full (one problem does not hide the next), and each
   refused row is named once with every problem in it; a problem that is not one row's (a
   header column, a mapping) names the file and the field, never every row;
4. keys a file by the SHA-256 of its bytes (``import_key``) within its version: the same file
   imported again is a no-op that says so (``already_imported``, an ``ImportOutcome`` as every
   import's answer), checked before the file is read
   and again once the version row is locked (``version_lock``), so of two imports of one file at
   once the second says so instead of writing twice (the design import keeps the key in its log
   entry; importing the same design file again changes nothing);
5. names the version in its log entry by ``version_ref`` (with the version's hash) and the import
   record by a registered ref type (``import_refs``).

The import services of responses and machine scores are their importers run in
``import_service`` (the collector paused, the file's name in its problems of the file as a
whole). The response file formats (CSV, JSON Lines, Inspect AI) and their reading are
``apps.responses.formats``; a preview kept between upload and confirmation is
``apps.responses.staging``.
"""

import functools
import gc
import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Generic, ParamSpec, Protocol, TypeVar, cast

from django.core.exceptions import ValidationError
from django.db.models import Model, QuerySet
from django.forms import BaseForm

from apps.core.words import counted
from apps.protocols.models import ProtocolVersion, VersionState
from apps.protocols.refs import version_ref

# How many problems an answer lists; the rest are counted.
MAX_LISTED_PROBLEMS = 100

Outcome = TypeVar("Outcome")
Numbered = TypeVar("Numbered")
Arguments = ParamSpec("Arguments")


@dataclass(frozen=True)
class ImportProblem:
    """One thing wrong with a file: where (``row``, numbered as ``numbered`` does; None for the
    file as a whole), which ``field`` ("" for the row or the file) and what."""

    row: int | None
    field: str
    message: str
    # How the record names itself, when more than its row helps (an Inspect sample's id, epoch).
    label: str = ""
    # What a row is called in this format: "row", or "entry" for a design file's JSON cells.
    unit: str = "row"
    # The file's name, once the import names it (``file_named``).
    file: str = ""

    @property
    def where(self) -> str:
        if self.row is None:
            where = f"the file {self.file}" if self.file else "the file"
        else:
            where = f"{self.unit} {self.row}"
        return f"{where} ({self.label})" if self.label else where

    def __str__(self) -> str:
        if self.field:
            return f"{self.where}, {self.field}: {self.message}"
        return f"{self.where}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "row": self.row,
            "field": self.field,
            "message": self.message,
            "label": self.label,
            **({"file": self.file} if self.file else {}),
        }


NO_RECORDS = ImportProblem(None, "", "the file holds no records")


def problems_by_row(problems: Iterable[ImportProblem]) -> list[ImportProblem]:
    """``problems`` once each, the file's own first, then row by row in file order (a row's
    problems together, in the order they were found)."""
    unique = list(dict.fromkeys(problems))
    return sorted(unique, key=lambda p: (p.row is not None, p.row or 0))


def _row_message(problems: list[ImportProblem]) -> str:
    """One row's (or the file's) problems as one message: the row named once."""
    first = problems[0]
    if len(problems) == 1:
        return str(first)
    said = "; ".join(f"{p.field}: {p.message}" if p.field else p.message for p in problems)
    return f"{first.where}: {said}"


class ImportRejected(ValidationError):
    """The file was not imported; ``problems`` (at most 100, each once, the file's own first and
    then by row: ``problems_by_row``) say where and why, ``total`` counts them all. Its messages
    name each refused row once, with every problem found in it."""

    def __init__(self, problems: Sequence[ImportProblem], *, total: int | None = None):
        ordered = problems_by_row(problems)
        self.problems = ordered[:MAX_LISTED_PROBLEMS]
        self.total = max(len(ordered), total or 0)
        grouped: dict[tuple[int | None, str], list[ImportProblem]] = {}
        for problem in self.problems:
            grouped.setdefault((problem.row, problem.unit), []).append(problem)
        messages = [_row_message(group) for group in grouped.values()]
        if self.unlisted:
            messages.append(self.unlisted)
        super().__init__(messages)

    @property
    def unlisted(self) -> str:
        """Those counted in ``total`` but not listed, in words ("… and 12 more problems");
        "" when every problem is listed."""
        more = self.total - len(self.problems)
        return f"… and {more} more problems" if more > 0 else ""

    @property
    def nothing_imported(self) -> str:
        """The refusal in words, as every answer opens it: "Nothing was imported: 3 problems"."""
        return f"Nothing was imported: {counted(self.total, 'problem')}"

    def on_form(self, form: BaseForm) -> tuple[list[ImportProblem], int]:
        """Put the refusal on an upload page's ``form``, above the list of its problems, and
        return what the page lists: ``(problems, total)``."""
        form.add_error(None, f"{self.nothing_imported}, listed below.")
        return self.problems, self.total


@contextmanager
def file_named(filename: str) -> Iterator[None]:
    """Name ``filename`` in every problem of the file as a whole that an ``ImportRejected``
    raised inside reports ("the file answers.csv, mapping: …")."""
    try:
        yield
    except ImportRejected as error:
        raise ImportRejected(
            [replace(p, file=filename) if p.row is None else p for p in error.problems],
            total=error.total,
        ) from None


def numbered(records: Iterable[Numbered], *, header: bool) -> Iterator[tuple[int, Numbered]]:
    """``(row, record)`` for each record: from 2 after a header row (the header is row 1), else
    from 1. Every importer numbers its rows through this, so a reported row is the one a
    spreadsheet or an editor shows."""
    return enumerate(records, start=2 if header else 1)


def import_key(data: bytes) -> str:
    """The idempotency key of a file: the SHA-256 (hex) of its bytes. Within one version, a file
    with a key already imported is not imported again. (A streamed file hashes to the same key
    with ``apps.responses.formats.source_sha256``.)"""
    return hashlib.sha256(data).hexdigest()


class ImportRecord(Protocol):
    """What the frame reads of a stored import (``ResponseImport``, ``MachineScoreImport``)."""

    @property
    def pk(self) -> Any: ...

    @property
    def sha256(self) -> str: ...

    @property
    def filename(self) -> str: ...

    @property
    def imported_at(self) -> Any: ...

    @property
    def imported_by(self) -> Any: ...

    @property
    def counts(self) -> dict[str, Any]: ...


# A stored import: a model with the fields ``ImportRecord`` names.
Record = TypeVar("Record", bound=Model)


@dataclass
class ImportOutcome(Generic[Record]):
    """What an import did: ``status`` ``imported``, ``already_imported`` (a no-op) or
    ``dry_run``; its ``message`` and ``counts``; the import ``record`` (None for a dry run); the
    first rows of a dry run (``preview``)."""

    status: str
    message: str
    counts: dict[str, Any] = field(default_factory=dict)
    record: Record | None = None
    preview: list[dict[str, Any]] = field(default_factory=list)


def already_imported(
    imports: QuerySet[Record], digest: str, *, counted: str, noun: str
) -> ImportOutcome[Record] | None:
    """The no-op outcome when the file keyed ``digest`` is among ``imports`` (a version's), else
    None. Its message says when, by whom and what it held (``counts[counted]`` ``noun``)."""
    earlier = imports.filter(sha256=digest).select_related("imported_by").first()
    if earlier is None:
        return None
    seen = cast(ImportRecord, earlier)
    return ImportOutcome(
        status="already_imported",
        message=(
            f"Nothing to do: this file (sha256 {digest[:16]}…) was already imported on "
            f"{seen.imported_at:%Y-%m-%d %H:%M} UTC by {seen.imported_by}: "
            f"{seen.counts.get(counted, 0)} {noun}. Nothing was written."
        ),
        counts=seen.counts,
        record=earlier,
    )


def import_refs(version: ProtocolVersion, ref_type: str, record: ImportRecord) -> list[dict]:
    """The log refs of an import: the version (``version_ref``, with its hash) and the import
    record as a ref of ``ref_type`` (``import``, ``machine_score_import``: each registered with
    ``apps.deviations.refs``)."""
    return [version_ref(version), {"type": ref_type, "id": record.pk, "label": record.filename}]


def version_require_open(version: ProtocolVersion, *, draft: str, withdrawn: str) -> None:
    """Raise ValidationError(``draft``) unless ``version`` is frozen, ValidationError(``withdrawn``)
    when it was withdrawn: an import attaches rows to a frozen version's schedule only."""
    if version.state != VersionState.FROZEN:
        raise ValidationError(draft)
    if hasattr(version, "withdrawal"):
        raise ValidationError(withdrawn)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for the duration.

    A large file becomes hundreds of thousands of small dicts and strings, none in a cycle; the
    collector would otherwise scan them again and again as they are made.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def import_service(
    importer: Callable[Arguments, Outcome],
) -> Callable[Arguments, Outcome]:
    """``importer`` (keyword-only, with a ``filename``) run as every import service runs it:
    with the collector paused (``collector_paused``) and ``filename`` named in each problem of
    the file as a whole that its ``ImportRejected`` reports (``file_named``). The service's
    ``@transaction.atomic`` goes above it."""

    @functools.wraps(importer)
    def service(*args: Arguments.args, **kwargs: Arguments.kwargs) -> Outcome:
        with collector_paused(), file_named(str(kwargs["filename"])):
            return importer(*args, **kwargs)

    return service


def version_lock(version: ProtocolVersion, already: Callable[[], Outcome | None]) -> Outcome | None:
    """Lock ``version``'s row until the transaction ends, so imports into one version take turns
    (numbers and the idempotency check are decided under the lock), and return ``already()``:
    the earlier import of the same file, committed while this one was reading, or None."""
    ProtocolVersion.objects.select_for_update().filter(pk=version.pk).first()
    return already()


def problems_refuse(problems: Sequence[ImportProblem]) -> None:
    """All or nothing: raise ``ImportRejected`` when there is any problem."""
    if problems:
        raise ImportRejected(problems)
