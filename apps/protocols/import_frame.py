"""The frame every file import shares: responses (``apps.responses.importing``), machine scores
(``apps.raters.machine_import``) and an LLM judge's verdicts (``apps.raters.fidelity_import``).

Each import, whatever its rows hold:

1. refuses a version that takes no more rows (not frozen, or withdrawn) with a ValidationError
   (``version_require_open``);
2. is a no-op when the same file (by SHA-256) was already imported into the version: checked
   before the file is read and again once the version row is locked (``version_lock``), so of
   two imports of one file at once the second says so instead of writing twice;
3. takes the declared format or guesses it from the file name (``file_format``);
4. reads the rows as ``apps.responses.formats`` numbers them — a CSV row by its line (the header
   is row 1), a JSON Lines or Inspect AI record by its position — every unreadable row a problem
   of its own (``file_records``, or the response importer's stream);
5. collects every problem (row, field, message: ``ImportProblem``) before it decides, and
   refuses the whole file when there is any (``ImportRejected``, listing the first 100 and
   counting the rest), writing nothing;
6. keeps an uploaded file between its preview and its confirmation in ``apps.responses.staging``
   (for the person who uploaded it, on that version only).
"""

import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

from django.core.exceptions import ValidationError

from apps.protocols.models import ProtocolVersion, VersionState
from apps.responses.formats import (
    FileUnreadable,
    ImportProblem,
    SourceFile,
    guess_format,
    read_file,
)

# How many problems an answer lists; the rest are counted.
MAX_LISTED_PROBLEMS = 100
NO_RECORDS = ImportProblem(None, "", "the file holds no records")

Outcome = TypeVar("Outcome")


class ImportRejected(ValidationError):
    """The file was not imported; ``problems`` (at most 100) say where and why, ``total`` counts
    them all."""

    def __init__(self, problems: Sequence[ImportProblem]):
        self.problems = list(problems[:MAX_LISTED_PROBLEMS])
        self.total = len(problems)
        messages = [str(problem) for problem in self.problems]
        if self.total > len(self.problems):
            messages.append(f"… and {self.total - len(self.problems)} more problems")
        super().__init__(messages)


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


def file_format(format: str | None, filename: str) -> str:
    """``format`` when given, else the one ``filename`` names (csv, jsonl, inspect); raises
    ``ImportRejected`` (field ``format``) when neither says."""
    found = format or guess_format(filename)
    if found is None:
        message = f"say which format {filename!r} is: csv, jsonl or inspect"
        raise ImportRejected([ImportProblem(None, "format", message)])
    return found


def file_records(data: bytes, format: str) -> SourceFile:
    """The whole file read as ``format``; raises ``ImportRejected`` with every unreadable row, or
    when the file holds no records."""
    try:
        source = read_file(data, format)
    except FileUnreadable as error:
        raise ImportRejected(error.problems) from error
    if not source.records:
        raise ImportRejected([NO_RECORDS])
    return source


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
