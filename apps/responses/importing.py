"""The import of one file of attempts: read it, check every record, then write every record.

Called by ``services.responses_import`` inside its transaction. The steps:

1. the version must be frozen (responses attach only to a frozen schedule);
2. the same file (SHA-256) already imported into this version → a no-op that says so;
3. read the file (``formats``) and check the mapping (``mapping``);
4. lock the version row, so imports into one version run one at a time (attempt numbers and the
   idempotency check are decided under the lock);
5. resolve each record to its administration and check every field, collecting every problem
   (row, field, message); any problem → ``ImportRejected`` and nothing is written;
6. write the import record, the attempts and their responses in bulk, and the log entries.
"""

import gc
import json
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import Max
from django.utils import timezone

from apps.core.canonical import sha256_hex
from apps.deviations.models import EntryKind
from apps.deviations.services import deviation_append
from apps.items.models import Level
from apps.protocols.models import ProtocolVersion, VersionState
from apps.protocols.refs import version_ref
from apps.responses.formats import (
    FileUnreadable,
    ImportProblem,
    SourceFile,
    SourceRecord,
    guess_format,
    read_file,
)
from apps.responses.mapping import compile_source, effective_mapping, normalise_mapping
from apps.responses.models import (
    Administration,
    Attempt,
    Response,
    ResponseImport,
    RosterEntry,
    TerminalOutcome,
)

# How many problems an answer lists; the rest are counted.
MAX_LISTED_PROBLEMS = 100
PREVIEW_ROWS = 20
BATCH_SIZE = 5000

# One encoder for every record: json.dumps(..., ensure_ascii=False) would build one per call.
_JSON = json.JSONEncoder(ensure_ascii=False)
_TRUE = {"1", "true", "yes", "y", "rerun"}
_FALSE = {"", "0", "false", "no", "n"}
_BOOLEAN = _TRUE | _FALSE
_OUTCOMES = {choice.value for choice in TerminalOutcome}
# Outcomes that always carry a response text (possibly empty); platform losses never do.
_TEXT_REQUIRED = {TerminalOutcome.COMPLETED, TerminalOutcome.REFUSED}


class ImportRejected(ValidationError):
    """The file was not imported; ``problems`` (at most 100) say where and why, ``total`` counts
    them all."""

    def __init__(self, problems: list[ImportProblem]):
        self.problems = problems[:MAX_LISTED_PROBLEMS]
        self.total = len(problems)
        messages = [str(problem) for problem in self.problems]
        if self.total > len(self.problems):
            messages.append(f"… and {self.total - len(self.problems)} more problems")
        super().__init__(messages)


@dataclass
class ImportOutcome:
    """What an import did: ``imported``, ``already_imported`` (a no-op) or ``dry_run``."""

    status: str
    message: str
    counts: dict[str, Any] = field(default_factory=dict)
    response_import: ResponseImport | None = None
    preview: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class _Planned:
    row: int
    administration_id: int
    number: int
    terminal_outcome: str
    started_at: datetime | None
    ended_at: datetime | None
    text: str | None
    raw: Any
    raw_json: str

    @property
    def has_response(self) -> bool:
        if self.terminal_outcome == TerminalOutcome.PLATFORM_LOSS or self.text is None:
            return False
        return bool(self.text) or self.terminal_outcome in _TEXT_REQUIRED


class _Schedule:
    """The frozen schedule, roster and earlier attempts of a version, as lookup tables."""

    def __init__(self, version: ProtocolVersion):
        self.by_key: dict[tuple, int] = {}
        self.by_position: dict[int, int] = {}
        self.entries: dict[int, tuple] = {}
        self.evaluand_of: dict[int, int] = {}
        roster = list(
            RosterEntry.objects.filter(version=version).values_list(
                "code", "evaluand_id", "evaluand__model"
            )
        )
        self.code_of = {evaluand_id: code for code, evaluand_id, _ in roster}
        self.evaluand_by_code = {code: evaluand_id for code, evaluand_id, _ in roster}
        self.evaluands_by_model: dict[str, list[int]] = {}
        for _, evaluand_id, model in roster:
            self.evaluands_by_model.setdefault(model, []).append(evaluand_id)
        rows = Administration.objects.filter(version=version).values_list(
            "pk", "position", "cell__item__code", "cell__level__code", "evaluand_id", "repetition"
        )
        self.items: set[str] = set()
        self.repetitions = 0
        for pk, position, item, level, evaluand_id, repetition in rows:
            self.by_key[(item, level, evaluand_id, repetition)] = pk
            self.by_position[position] = pk
            self.evaluand_of[pk] = evaluand_id
            self.entries[pk] = (position, item, level, evaluand_id, repetition)
            self.items.add(item)
            self.repetitions = max(self.repetitions, repetition)
        self.levels = list(
            Level.objects.filter(version=version).order_by("ordinal").values_list("code", flat=True)
        )
        # Attempt numbers so far, per administration (absent: none yet).
        self.attempts = dict(
            Attempt.objects.filter(version=version)
            .values("administration_id")
            .annotate(last=Max("number"))
            .values_list("administration_id", "last")
        )

    def describe(self, pk: int) -> str:
        position, item, level, evaluand_id, repetition = self.entries[pk]
        return f"#{position} ({item}@{level}, {self.code_of[evaluand_id]}, repetition {repetition})"


def _version_problem(version: ProtocolVersion) -> str | None:
    if version.state != VersionState.FROZEN:
        return (
            f"Responses attach only to a frozen version: {version} is a draft. Freeze it first, "
            "so that its schedule exists."
        )
    if hasattr(version, "withdrawal"):
        return f"{version} has been withdrawn; it takes no more responses."
    return None


def _integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _moment(value: Any) -> tuple[datetime | None, str | None]:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, None
    if not isinstance(value, str):
        return None, f"{value!r} is not an ISO 8601 date and time"
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return None, f"{value!r} is not an ISO 8601 date and time"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment, None


class _Checker:
    """Resolves and checks records one by one, collecting problems and the planned attempts."""

    def __init__(self, schedule: _Schedule, mapping: dict[str, dict]):
        self.schedule = schedule
        self.mapping = mapping
        self.sources = {target: compile_source(spec) for target, spec in mapping.items()}
        self.problems: list[ImportProblem] = []
        self.planned: list[_Planned] = []
        self.rows_in_file: dict[int, int] = {}
        self.count_in_file: dict[int, int] = {}

    def value(self, record: SourceRecord, target: str) -> Any:
        source = self.sources.get(target)
        if source is None:
            return None
        value, problem = source(record.fields)
        if problem:
            self.problem(record, target, problem)
        return value

    def problem(self, record: SourceRecord, target: str, message: str) -> None:
        self.problems.append(ImportProblem(record.row, target, message, record.label))

    def administration(self, record: SourceRecord) -> int | None:
        schedule = self.schedule
        if "position" in self.mapping:
            raw = self.value(record, "position")
            position = _integer(raw)
            if position is None:
                self.problem(record, "position", f"{raw!r} is not a schedule position")
                return None
            if position not in schedule.by_position:
                self.problem(
                    record,
                    "position",
                    f"the frozen schedule has positions 1–{len(schedule.by_position)}, "
                    f"not {position}",
                )
                return None
            return schedule.by_position[position]
        found = True
        item = self.value(record, "item")
        item = str(item).strip() if item is not None else ""
        if not item:
            self.problem(record, "item", "no item code")
            found = False
        elif item not in schedule.items:
            self.problem(record, "item", f"no item {item!r} is administered in this version")
            found = False
        if "level" in self.mapping:
            level = self.value(record, "level")
            level = str(level).strip() if level is not None else ""
        else:
            level = schedule.levels[0] if len(schedule.levels) == 1 else ""
        if level not in schedule.levels:
            known = ", ".join(schedule.levels)
            self.problem(record, "level", f"{level!r} is not a level of this design ({known})")
            found = False
        evaluand = self.value(record, "evaluand")
        evaluand = str(evaluand).strip() if evaluand is not None else ""
        evaluand_id = schedule.evaluand_by_code.get(evaluand)
        if evaluand_id is None and len(schedule.evaluands_by_model.get(evaluand, [])) == 1:
            evaluand_id = schedule.evaluands_by_model[evaluand][0]
        if evaluand_id is None:
            codes = ", ".join(schedule.evaluand_by_code)
            self.problem(
                record, "evaluand", f"{evaluand!r} is not on this version's roster ({codes})"
            )
            found = False
        if "repetition" in self.mapping:
            raw = self.value(record, "repetition")
            repetition = _integer(raw)
        else:
            raw, repetition = None, 1 if schedule.repetitions == 1 else None
        if repetition is None:
            self.problem(
                record,
                "repetition",
                f"{raw!r} is not a repetition number"
                if raw is not None
                else f"no repetition (the schedule has {schedule.repetitions})",
            )
            found = False
        if not found:
            return None
        pk = schedule.by_key.get((item, level, evaluand_id, repetition))
        if pk is None:
            self.problem(
                record,
                "administration",
                f"the frozen schedule has no administration of {item}@{level} to {evaluand} "
                f"at repetition {repetition}",
            )
        return pk

    def run(self, records: list[SourceRecord]) -> None:
        for record in records:
            self.check(record)

    def check(self, record: SourceRecord) -> None:
        before = len(self.problems)
        administration_id = self.administration(record)
        outcome = self.value(record, "terminal_outcome")
        outcome = (
            TerminalOutcome.COMPLETED
            if outcome is None or outcome == ""
            else str(outcome).strip().lower()
        )
        if outcome not in _OUTCOMES:
            self.problem(
                record,
                "terminal_outcome",
                f"{outcome!r} is not a terminal outcome ({', '.join(sorted(_OUTCOMES))})",
            )
        text = self.value(record, "response")
        if text is not None and not isinstance(text, str):
            self.problem(record, "response", "the response must be text")
        elif text is not None and "\x00" in text:
            self.problem(record, "response", "contains a NUL character, which cannot be stored")
        elif outcome == TerminalOutcome.PLATFORM_LOSS and text:
            self.problem(
                record,
                "response",
                "a platform loss never reached the model, so it has no response; leave it empty",
            )
        elif outcome in _TEXT_REQUIRED and text is None:
            self.problem(record, "response", f"a {outcome} attempt needs its response text")
        started_at, problem = _moment(self.value(record, "started_at"))
        if problem:
            self.problem(record, "started_at", problem)
        ended_at, problem = _moment(self.value(record, "ended_at"))
        if problem:
            self.problem(record, "ended_at", problem)
        if started_at and ended_at and ended_at < started_at:
            self.problem(record, "ended_at", "ends before it starts")
        rerun_value = self.value(record, "rerun")
        rerun_text = "" if rerun_value is None else str(rerun_value).strip().lower()
        if rerun_text not in _BOOLEAN:
            self.problem(record, "rerun", f"{rerun_value!r} is neither true nor false")
        rerun = rerun_text in _TRUE
        raw_json = _JSON.encode(record.raw)
        if "\\u0000" in raw_json:
            self.problem(record, "", "the record contains a NUL character, which cannot be stored")
        if administration_id is None:
            return
        earlier = self.schedule.attempts.get(administration_id, 0)
        in_file = self.count_in_file.get(administration_id, 0)
        describe = self.schedule.describe(administration_id) if earlier or in_file or rerun else ""
        if (earlier or in_file) and not rerun:
            where = (
                f"row {self.rows_in_file[administration_id]} of this file"
                if in_file
                else "an earlier import"
            )
            self.problem(
                record,
                "administration",
                f"administration {describe} already has an attempt ({where}); "
                "if this record is a rerun, say so in the column mapped to rerun",
            )
        elif rerun and not (earlier or in_file):
            self.problem(
                record,
                "rerun",
                f"marked as a rerun, but administration {describe} has no earlier attempt",
            )
        self.count_in_file[administration_id] = in_file + 1
        self.rows_in_file.setdefault(administration_id, record.row)
        if len(self.problems) > before:
            return
        self.planned.append(
            _Planned(
                row=record.row,
                administration_id=administration_id,
                number=earlier + in_file + 1,
                terminal_outcome=outcome,
                started_at=started_at,
                ended_at=ended_at,
                text=text,
                raw=record.raw,
                raw_json=raw_json,
            )
        )


def _counts(planned: list[_Planned], schedule: _Schedule) -> dict:
    by_outcome = Counter(p.terminal_outcome for p in planned)
    by_evaluand = Counter(
        schedule.code_of[schedule.evaluand_of[p.administration_id]] for p in planned
    )
    return {
        "records": len(planned),
        "attempts": len(planned),
        "responses": sum(1 for p in planned if p.has_response),
        "reruns": sum(1 for p in planned if p.number > 1),
        "platform_losses": by_outcome.get(TerminalOutcome.PLATFORM_LOSS, 0),
        "by_outcome": dict(sorted(by_outcome.items())),
        "by_evaluand": dict(sorted(by_evaluand.items())),
    }


def _write_bulk(response_import: ResponseImport, planned: list[_Planned]) -> None:
    version_id = response_import.version_id
    for start in range(0, len(planned), BATCH_SIZE):
        batch = planned[start : start + BATCH_SIZE]
        attempts = Attempt.objects.bulk_create(
            [
                Attempt(
                    version_id=version_id,
                    administration_id=p.administration_id,
                    number=p.number,
                    started_at=p.started_at,
                    ended_at=p.ended_at,
                    terminal_outcome=p.terminal_outcome,
                    raw=p.raw,
                    source=response_import,
                    source_row=p.row,
                )
                for p in batch
            ]
        )
        Response.objects.bulk_create(
            [
                Response(
                    version_id=version_id,
                    attempt_id=attempt.pk,
                    text=p.text,
                    word_count=len(p.text.split()),
                )
                for attempt, p in zip(attempts, batch, strict=True)
                if p.has_response
            ]
        )


def _write_copy(response_import: ResponseImport, planned: list[_Planned]) -> None:
    """PostgreSQL: COPY both append-only tables, with ids drawn from their sequences first.

    Several times faster than INSERT for large files, and inside the same transaction.
    """
    version_id = response_import.version_id
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence('responses_attempt', 'id')) "
            "FROM generate_series(1, %s)",
            [len(planned)],
        )
        attempt_ids = [row[0] for row in cursor.fetchall()]
        with cursor.copy(
            "COPY responses_attempt (id, version_id, administration_id, number, started_at, "
            "ended_at, terminal_outcome, raw, source_id, source_row, created_at) FROM STDIN"
        ) as copy:
            for attempt_id, p in zip(attempt_ids, planned, strict=True):
                copy.write_row(
                    (
                        attempt_id,
                        version_id,
                        p.administration_id,
                        p.number,
                        p.started_at,
                        p.ended_at,
                        p.terminal_outcome,
                        p.raw_json,
                        response_import.pk,
                        p.row,
                        now,
                    )
                )
        with cursor.copy(
            "COPY responses_response (version_id, attempt_id, text, word_count) FROM STDIN"
        ) as copy:
            for attempt_id, p in zip(attempt_ids, planned, strict=True):
                if p.has_response:
                    copy.write_row((version_id, attempt_id, p.text, len(p.text.split())))


def _preview(planned: list[_Planned], schedule: _Schedule) -> list[dict[str, Any]]:
    return [
        {
            "row": p.row,
            "administration": schedule.describe(p.administration_id),
            "attempt": p.number,
            "terminal_outcome": p.terminal_outcome,
            "response": (p.text or "")[:200],
        }
        for p in planned[:PREVIEW_ROWS]
    ]


def _summary(counts: dict) -> str:
    outcomes = ", ".join(f"{n} {outcome}" for outcome, n in counts["by_outcome"].items())
    return (
        f"{counts['attempts']} attempts ({outcomes}), {counts['responses']} responses, "
        f"{counts['reruns']} reruns, {counts['platform_losses']} platform losses"
    )


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


# Checks later apps add to every response import (seed 002's: a record's sub-study and condition
# against the frozen schedule, task blocks whole, every tool name routed). Each takes the version
# and the planned attempts (``row``, ``administration_id``, ``terminal_outcome``, ``raw``) and
# returns ImportProblems; any problem refuses the whole file, as the importer's own do.
_record_checks: list[Callable[[ProtocolVersion, list[_Planned]], list[ImportProblem]]] = []


def register_record_check(
    check: Callable[[ProtocolVersion, list[_Planned]], list[ImportProblem]],
) -> None:
    """Add a check every response import runs once its own checks pass (idempotent)."""
    if check not in _record_checks:
        _record_checks.append(check)


def _registered_problems(version: ProtocolVersion, checker: _Checker) -> list[ImportProblem]:
    if checker.problems:  # the records must resolve before later apps can judge them
        return []
    return [problem for check in _record_checks for problem in check(version, checker.planned)]


def import_file(
    *,
    version: ProtocolVersion,
    user,
    data: bytes,
    filename: str,
    format: str | None,
    mapping: dict | None,
    note: str,
    dry_run: bool,
) -> ImportOutcome:
    """See ``services.responses_import``; runs inside its transaction."""
    refusal = _version_problem(version)
    if refusal:
        raise ValidationError(refusal)
    digest = sha256_hex(data)

    def already() -> ImportOutcome | None:
        earlier = (
            ResponseImport.objects.filter(version=version, sha256=digest)
            .select_related("imported_by")
            .first()
        )
        if earlier is None:
            return None
        return ImportOutcome(
            status="already_imported",
            message=(
                f"Nothing to do: this file was already imported on "
                f"{earlier.imported_at:%Y-%m-%d %H:%M} UTC by {earlier.imported_by}: "
                f"{earlier.counts.get('attempts', 0)} attempts."
            ),
            counts=earlier.counts,
            response_import=earlier,
        )

    if outcome := already():
        return outcome
    format = format or guess_format(filename)
    if format is None:
        raise ImportRejected(
            [
                ImportProblem(
                    None, "format", f"say which format {filename!r} is: csv, jsonl or inspect"
                )
            ]
        )
    try:
        source: SourceFile = read_file(data, format)
    except FileUnreadable as error:
        raise ImportRejected(error.problems) from error
    if not source.records:
        raise ImportRejected([ImportProblem(None, "", "the file holds no records")])
    columns = source.columns
    if columns is None:
        columns = sorted({key for record in source.records for key in record.fields})
    normalised, problems = normalise_mapping(
        effective_mapping(mapping or {}, format=format, columns=columns), columns=source.columns
    )
    if "response" not in normalised:
        problems.append(ImportProblem(None, "mapping.response", "map the response text"))
    if problems:
        raise ImportRejected(problems)

    # Imports into one version take turns: the attempt numbers and the idempotency check below
    # are only right if no other import into this version commits in between.
    ProtocolVersion.objects.select_for_update().filter(pk=version.pk).first()
    if outcome := already():
        return outcome
    schedule = _Schedule(version)
    checker = _Checker(schedule, normalised)
    checker.run(source.records)
    checker.problems.extend(_registered_problems(version, checker))
    if checker.problems:
        raise ImportRejected(checker.problems)
    planned = checker.planned
    counts = _counts(planned, schedule)
    if dry_run:
        return ImportOutcome(
            status="dry_run",
            message=f"Ready to import {filename}: {_summary(counts)}. Nothing was written.",
            counts=counts,
            preview=_preview(planned, schedule),
        )
    response_import = ResponseImport(
        version=version,
        sha256=digest,
        filename=filename[:255],
        format=format,
        mapping=normalised,
        header=source.header,
        note=note.strip(),
        counts=counts,
        imported_by=user,
    )
    response_import.full_clean()
    response_import.save()
    if connection.vendor == "postgresql":
        _write_copy(response_import, planned)
    else:
        _write_bulk(response_import, planned)
    _log(version, user, response_import, planned, schedule)
    return ImportOutcome(
        status="imported",
        message=f"Imported {filename}: {_summary(counts)}.",
        counts=counts,
        response_import=response_import,
        preview=_preview(planned, schedule),
    )


def _log(version, user, response_import, planned, schedule) -> None:
    counts = response_import.counts
    refs = [
        version_ref(version),
        {"type": "import", "id": response_import.pk, "label": response_import.filename},
    ]
    note = f" Note: {response_import.note}" if response_import.note else ""
    deviation_append(
        protocol=version.protocol,
        kind=EntryKind.IMPORT,
        rationale=(
            f"Imported {response_import.filename} ({response_import.format}, sha256 "
            f"{response_import.sha256}): {_summary(counts)}.{note}"
        ),
        actor=user,
        refs=refs,
    )
    if counts["platform_losses"]:
        deviation_append(
            protocol=version.protocol,
            kind=EntryKind.PLATFORM_LOSS,
            rationale=(
                f"{counts['platform_losses']} platform losses in {response_import.filename}: "
                "infrastructure failures that never reached the model, counted apart from "
                "model outcomes."
            ),
            actor=user,
            refs=refs,
        )
    reruns = [p for p in planned if p.number > 1]
    if reruns:
        listed = ", ".join(
            f"{schedule.describe(p.administration_id)} attempt {p.number}" for p in reruns[:50]
        )
        more = f" and {len(reruns) - 50} more" if len(reruns) > 50 else ""
        deviation_append(
            protocol=version.protocol,
            kind=EntryKind.RERUN,
            rationale=(
                f"{len(reruns)} reruns in {response_import.filename}: {listed}{more}. "
                f"The earlier attempts are kept.{note}"
            ),
            actor=user,
            refs=refs,
        )
