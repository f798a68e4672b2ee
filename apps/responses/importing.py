"""The import of one file of attempts, ``responses_import`` (the service; callers import it from
``apps.responses.services`` with the app's other writes): read, check and write its records as
they stream past, in the frame every import shares (``apps.protocols.import_frame``: the
version's refusal, idempotency, format, row numbers, the lock, all-or-nothing). The steps:

1. the version must be frozen (responses attach only to a frozen schedule);
2. the same file (SHA-256) already imported into this version → a no-op that says so;
3. open the file (``formats.stream_file``: records one at a time) and check the mapping
   (``mapping``);
4. lock the version row, so imports into one version run one at a time (attempt numbers and the
   idempotency check are decided under the lock);
5. resolve each record to its administration and check every field, collecting every problem
   (row, field, message), and write the records that pass in batches (``_Writer``) while the
   file has shown no problem; any problem → ``ImportRejected``, and the transaction takes back
   what was written, so nothing is half-written;
6. write the import record (last: it is append-only and holds the final counts) and the log
   entries.

Memory does not grow with the file: one batch of records, the schedule's lookup tables and a
bounded tally (counts, the preview's first rows, the log's first reruns).
"""

import json
from array import array
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from django.core.files.uploadedfile import UploadedFile
from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone

from apps.accounts.models import User
from apps.core.inputs import whole_number
from apps.deviations.models import EntryKind
from apps.deviations.services import NewEntry, deviation_append_many
from apps.items.models import Level
from apps.protocols.components import registered_components
from apps.protocols.import_frame import (
    NO_RECORDS,
    ImportOutcome,
    ImportProblem,
    ImportRejected,
    already_imported,
    import_refs,
    import_service,
    version_lock,
    version_require_open,
)
from apps.protocols.models import ProtocolVersion
from apps.responses.formats import (
    FileUnreadable,
    Opener,
    SourceRecord,
    SourceStream,
    file_format,
    source_opener,
    source_sha256,
    stream_file,
)
from apps.responses.mapping import compile_source, effective_mapping, normalise_mapping
from apps.responses.models import (
    Administration,
    Attempt,
    Response,
    ResponseImport,
    RosterEntry,
    SessionColumns,
    TerminalOutcome,
    crossed_evidence_gate,
)
from apps.responses.sessions import SESSION_FIELDS, RecordError, SessionRecord, session_record

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
    evidence_gate: bool | None = None
    # The session's typed columns, for versions whose checks ask for them (``session_columns``).
    session: SessionRecord | None = None

    @property
    def has_response(self) -> bool:
        if self.terminal_outcome == TerminalOutcome.PLATFORM_LOSS or self.text is None:
            return False
        return bool(self.text) or self.terminal_outcome in _TEXT_REQUIRED

    @property
    def response_text(self) -> str:
        """The response's text where ``has_response`` (never None there)."""
        return self.text or ""


def _sorted_index(keys: "np.ndarray") -> tuple[array, array]:
    # The keys in order, and the schedule row of each: a binary search finds a key's row.
    order = np.argsort(keys, kind="stable")
    return array("q", keys[order].tobytes()), array("q", order.astype(np.int64).tobytes())


class _Lookup:
    """A read-only mapping from an integer key to a schedule row's value, kept in two sorted
    machine-integer arrays (16 bytes an entry) rather than a dict of Python objects (about 100),
    and searched with ``bisect``: a schedule of 100,000 administrations costs 1.6 MB."""

    def __init__(self, keys: array, rows: array, values: array):
        self._keys, self._rows, self._values = keys, rows, values

    def row(self, key: int) -> int | None:
        at = bisect_left(self._keys, key)
        if at < len(self._keys) and self._keys[at] == key:
            return self._rows[at]
        return None

    def get(self, key: int, default: Any = None) -> Any:
        row = self.row(key)
        return default if row is None else self._values[row]

    def __getitem__(self, key: int) -> Any:
        row = self.row(key)
        if row is None:
            raise KeyError(key)
        return self._values[row]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, int) and self.row(key) is not None

    def __len__(self) -> int:
        return len(self._keys)


class _KeyLookup:
    """``(item, level, evaluand_id, repetition)`` → administration id, over one integer code per
    administration (see ``_Schedule``)."""

    def __init__(self, schedule: "_Schedule", lookup: _Lookup):
        self._schedule, self._lookup = schedule, lookup

    def get(self, key: tuple, default: Any = None) -> Any:
        code = self._schedule.key_code(*key)
        return default if code is None else self._lookup.get(code, default)


class _Entries:
    """Administration id → ``(position, item, level, evaluand_id, repetition)``, built on
    demand from the schedule's columns."""

    def __init__(self, schedule: "_Schedule"):
        self._schedule = schedule

    def __getitem__(self, pk: int) -> tuple:
        return self._schedule.entry(pk)


class _Schedule:
    """The frozen schedule, roster and earlier attempts of a version, as lookup tables.

    The administrations are held as columns of machine integers (``array``), one row each,
    ordered by id, and found by binary search: a 125,000-administration schedule takes a few MB
    where dicts of tuples took about 60 (issue #18's memory target). ``by_key``,
    ``by_position``, ``evaluand_of`` and ``entries`` answer as the mappings they replace.
    """

    def __init__(self, version: ProtocolVersion):
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
        self.levels = list(
            Level.objects.filter(version=version).order_by("ordinal").values_list("code", flat=True)
        )
        rows = (
            Administration.objects.filter(version=version)
            .order_by("pk")
            .values_list(
                "pk",
                "position",
                "cell__item__code",
                "cell__level__code",
                "evaluand_id",
                "repetition",
            )
            .iterator(chunk_size=10_000)
        )
        self._item_codes: list[str] = []
        self._item_index: dict[str, int] = {}
        self._level_index = {code: n for n, code in enumerate(self.levels)}
        self._evaluand_index: dict[int, int] = {}
        self._evaluand_ids: list[int] = []
        pks, positions, items, levels, evaluands, repetitions = (array("q") for _ in range(6))
        for pk, position, item, level, evaluand_id, repetition in rows:
            item_at = self._item_index.get(item)
            if item_at is None:
                item_at = self._item_index[item] = len(self._item_codes)
                self._item_codes.append(item)
            evaluand_at = self._evaluand_index.get(evaluand_id)
            if evaluand_at is None:
                evaluand_at = self._evaluand_index[evaluand_id] = len(self._evaluand_ids)
                self._evaluand_ids.append(evaluand_id)
            pks.append(pk)
            positions.append(position)
            items.append(item_at)
            levels.append(self._level_index.setdefault(level, len(self._level_index)))
            evaluands.append(evaluand_at)
            repetitions.append(repetition)
        self._level_codes = list(self._level_index)  # by index: insertion order
        self._pks, self._positions, self._items = pks, positions, items
        self._levels, self._evaluands, self._repetitions = levels, evaluands, repetitions
        self.items: set[str] = set(self._item_codes)
        self.repetitions = max(repetitions, default=0)
        codes = (
            (
                np.frombuffer(items, dtype=np.int64) * len(self._level_index)
                + np.frombuffer(levels, dtype=np.int64)
            )
            * max(len(self._evaluand_ids), 1)
            + np.frombuffer(evaluands, dtype=np.int64)
        ) * (self.repetitions + 1) + np.frombuffer(repetitions, dtype=np.int64)
        self.by_key = _KeyLookup(self, _Lookup(*_sorted_index(codes), pks))
        self.by_position = _Lookup(*_sorted_index(np.frombuffer(positions, dtype=np.int64)), pks)
        evaluand_ids = array("q", (self._evaluand_ids[at] for at in evaluands))
        self.evaluand_of = _Lookup(pks, array("q", range(len(pks))), evaluand_ids)
        self.entries = _Entries(self)
        # Attempt numbers so far, per administration (absent: none yet).
        self.attempts = dict(
            Attempt.objects.filter(version=version)
            .values("administration_id")
            .annotate(last=Max("number"))
            .values_list("administration_id", "last")
        )

    def __len__(self) -> int:
        return len(self._pks)

    def key_code(self, item: str, level: str, evaluand_id: int, repetition: int) -> int | None:
        """The integer code of an administration's key, or None when a part is not scheduled."""
        item_at = self._item_index.get(item)
        level_at = self._level_index.get(level)
        evaluand_at = self._evaluand_index.get(evaluand_id)
        if item_at is None or level_at is None or evaluand_at is None:
            return None
        if not isinstance(repetition, int) or not 0 <= repetition <= self.repetitions:
            return None
        combined = (item_at * len(self._level_index) + level_at) * len(self._evaluand_ids)
        return (combined + evaluand_at) * (self.repetitions + 1) + repetition

    def row_of(self, pk: int) -> int:
        """The schedule row (0-based) of administration ``pk``; KeyError when not scheduled."""
        row = self.evaluand_of.row(pk)
        if row is None:
            raise KeyError(pk)
        return row

    def entry(self, pk: int) -> tuple:
        row = self.row_of(pk)
        return (
            self._positions[row],
            self._item_codes[self._items[row]],
            self._level_codes[self._levels[row]],
            self._evaluand_ids[self._evaluands[row]],
            self._repetitions[row],
        )

    def describe(self, pk: int) -> str:
        position, item, level, evaluand_id, repetition = self.entry(pk)
        return f"#{position} ({item}@{level}, {self.code_of[evaluand_id]}, repetition {repetition})"


def _integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        return whole_number(value)
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
    """Resolves and checks records one by one (``plan``), collecting their problems."""

    def __init__(self, schedule: _Schedule, mapping: dict[str, dict]):
        self.schedule = schedule
        self.mapping = mapping
        self.sources = {target: compile_source(spec) for target, spec in mapping.items()}
        self.problems: list[ImportProblem] = []
        # Per schedule row (``_Schedule.row_of``): the first row of this file that names the
        # administration (0: none yet), and how many of the file's records name it.
        self.rows_in_file = array("q", bytes(8 * len(schedule)))
        self.count_in_file = array("q", bytes(8 * len(schedule)))

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

    def administration_into(
        self, record: SourceRecord, problems: list[ImportProblem]
    ) -> int | None:
        """``administration(record)``, its problems moved to ``problems`` (an importer that
        keeps its own list: the machine-score and judge imports)."""
        before = len(self.problems)
        administration_id = self.administration(record)
        problems += self.problems[before:]
        del self.problems[before:]
        return administration_id

    def plan(self, record: SourceRecord) -> "_Planned | None":
        """Check ``record``: its plan, or None when it has a problem (added to ``problems``)."""
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
        evidence_gate = self.evidence_gate(record, outcome)
        raw_json = _JSON.encode(record.raw)
        if "\\u0000" in raw_json:
            self.problem(record, "", "the record contains a NUL character, which cannot be stored")
        if administration_id is None:
            return None
        earlier = self.schedule.attempts.get(administration_id, 0)
        at = self.schedule.row_of(administration_id)
        in_file = self.count_in_file[at]
        describe = self.schedule.describe(administration_id) if earlier or in_file or rerun else ""
        if (earlier or in_file) and not rerun:
            where = f"row {self.rows_in_file[at]} of this file" if in_file else "an earlier import"
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
        self.count_in_file[at] = in_file + 1
        self.rows_in_file[at] = self.rows_in_file[at] or record.row
        if len(self.problems) > before:
            return None
        return _Planned(
            row=record.row,
            administration_id=administration_id,
            number=earlier + in_file + 1,
            terminal_outcome=outcome,
            started_at=started_at,
            ended_at=ended_at,
            text=text,
            raw=record.raw,
            raw_json=raw_json,
            evidence_gate=evidence_gate,
        )

    def evidence_gate(self, record: SourceRecord, outcome: str) -> bool:
        """The attempt's execution-evidence flag (CRUCIBLE §4, §10), given or derived from the
        outcome. A flag that contradicts the outcome is a problem of the row: a platform loss
        never crossed the gate, and an attempt that never crossed it is a platform loss."""
        value = self.value(record, "evidence_gate")
        text = "" if value is None else str(value).strip().lower()
        if text == "":
            return crossed_evidence_gate(None, outcome)
        if text not in _BOOLEAN or text == "rerun":
            self.problem(record, "evidence_gate", f"{value!r} is neither true nor false")
            return False
        crossed = text in _TRUE
        if crossed and outcome == TerminalOutcome.PLATFORM_LOSS:
            self.problem(
                record,
                "evidence_gate",
                "a platform loss never crossed the execution-evidence gate; it cannot be true",
            )
        elif not crossed and outcome in _OUTCOMES and outcome != TerminalOutcome.PLATFORM_LOSS:
            self.problem(
                record,
                "evidence_gate",
                f"an attempt that never crossed the execution-evidence gate is a platform "
                f"loss, not {outcome!r}: record it as platform_loss, or the flag as true",
            )
        return crossed


class _Tally:
    """What the import's records add up to, kept as they stream past: the counts, the first
    ``PREVIEW_ROWS`` plans for the preview and the first 50 reruns for the log (a bounded
    amount, whatever the file's size)."""

    def __init__(self, schedule: _Schedule):
        self.schedule = schedule
        self.records = 0
        self.responses = 0
        self.reruns = 0
        self.by_outcome: Counter = Counter()
        self.by_evaluand: Counter = Counter()
        self.first: list[_Planned] = []
        self.first_reruns: list[tuple[int, int]] = []

    def add(self, p: _Planned) -> None:
        self.records += 1
        self.responses += p.has_response
        self.by_outcome[p.terminal_outcome] += 1
        schedule = self.schedule
        self.by_evaluand[schedule.code_of[schedule.evaluand_of[p.administration_id]]] += 1
        if p.number > 1:
            self.reruns += 1
            if len(self.first_reruns) < 50:
                self.first_reruns.append((p.administration_id, p.number))
        if len(self.first) < PREVIEW_ROWS:
            self.first.append(p)

    def counts(self) -> dict:
        return {
            "records": self.records,
            "attempts": self.records,
            "responses": self.responses,
            "reruns": self.reruns,
            "platform_losses": self.by_outcome.get(TerminalOutcome.PLATFORM_LOSS, 0),
            "by_outcome": dict(sorted(self.by_outcome.items())),
            "by_evaluand": dict(sorted(self.by_evaluand.items())),
        }

    def preview(self) -> list[dict[str, Any]]:
        return [
            {
                "row": p.row,
                "administration": self.schedule.describe(p.administration_id),
                "attempt": p.number,
                "terminal_outcome": p.terminal_outcome,
                "response": (p.text or "")[:200],
            }
            for p in self.first
        ]


def _write_bulk(version_id: int, import_id: int, planned: list[_Planned]) -> None:
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
                    evidence_gate=p.evidence_gate,
                    raw=p.raw,
                    source_id=import_id,
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
                    text=p.response_text,
                    word_count=len(p.response_text.split()),
                )
                for attempt, p in zip(attempts, batch, strict=True)
                if p.has_response
            ]
        )
        SessionColumns.objects.bulk_create(
            [
                SessionColumns(attempt_id=attempt.pk, **p.session.stored())
                for attempt, p in zip(attempts, batch, strict=True)
                if p.session is not None
            ]
        )


def _write_copy(version_id: int, import_id: int, planned: list[_Planned]) -> None:
    """PostgreSQL: COPY one batch into both append-only tables, with ids drawn from their
    sequences first.

    Several times faster than INSERT for large files, and inside the import's transaction.
    """
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
            "ended_at, terminal_outcome, evidence_gate, raw, source_id, source_row, created_at) "
            "FROM STDIN"
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
                        p.evidence_gate,
                        p.raw_json,
                        import_id,
                        p.row,
                        now,
                    )
                )
        with cursor.copy(
            "COPY responses_response (version_id, attempt_id, text, word_count) FROM STDIN"
        ) as copy:
            for attempt_id, p in zip(attempt_ids, planned, strict=True):
                if p.has_response:
                    text = p.response_text
                    copy.write_row((version_id, attempt_id, text, len(text.split())))
        if any(p.session is not None for p in planned):
            with cursor.copy(
                f"COPY responses_sessioncolumns (attempt_id, {', '.join(SESSION_FIELDS)}) "
                "FROM STDIN"
            ) as copy:
                for attempt_id, p in zip(attempt_ids, planned, strict=True):
                    if p.session is not None:
                        stored = p.session.stored()
                        stored["tool_calls"] = _JSON.encode(stored["tool_calls"])
                        copy.write_row((attempt_id, *(stored[f] for f in SESSION_FIELDS)))


class _Writer:
    """Writes the checked records a batch at a time, as they stream past, inside the import's
    transaction; a later problem in the file raises and the transaction takes every batch back,
    so nothing is half-written.

    On PostgreSQL the import record's id is drawn from its sequence first (``Attempt.source``
    has no database constraint, and the record itself is append-only, so it is inserted last,
    with its final counts) and each batch goes by ``COPY``. On SQLite, the embedded development
    database, the batches are kept and written at the end, after the import record."""

    def __init__(self, version: ProtocolVersion):
        self.version_id = version.pk
        self.batch: list[_Planned] = []
        # Drawn first on PostgreSQL, where batches go by COPY as they come; None on SQLite.
        self.import_id: int | None = None
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT nextval(pg_get_serial_sequence('responses_responseimport', 'id'))"
                )
                self.import_id = cursor.fetchone()[0]

    def add(self, planned: _Planned) -> None:
        self.batch.append(planned)
        if self.import_id is not None and len(self.batch) >= BATCH_SIZE:
            _write_copy(self.version_id, self.import_id, self.batch)
            self.batch = []

    def finish(self, response_import: ResponseImport) -> None:
        if self.import_id is not None:
            response_import.pk = self.import_id
        response_import.full_clean()
        response_import.save(force_insert=True)
        if self.import_id is None:
            _write_bulk(self.version_id, response_import.pk, self.batch)
        elif self.batch:
            _write_copy(self.version_id, self.import_id, self.batch)
        self.batch = []


def _summary(counts: dict) -> str:
    outcomes = ", ".join(f"{n} {outcome}" for outcome, n in counts["by_outcome"].items())
    return (
        f"{counts['attempts']} attempts ({outcomes}), {counts['responses']} responses, "
        f"{counts['reruns']} reruns, {counts['platform_losses']} platform losses"
    )


def _columns(opener: Opener, source: SourceStream) -> list[str]:
    """The keys of every record, for formats without a header: one streaming pass of its own
    (JSON Lines and Inspect AI logs alike, so that memory holds one record at a time). Raises
    ``ImportRejected`` for the file's reading problems, or when it holds no records."""
    keys: set[str] = set()
    first = stream_file(opener, source.format)
    seen = False
    for record in first.records:
        keys.update(record.fields)
        seen = True
    if first.problems:
        raise ImportRejected(first.problems)
    if not seen:
        raise ImportRejected([NO_RECORDS])
    return sorted(keys)


def _opened(opener: Opener, format: str, mapping: dict | None) -> tuple[SourceStream, dict]:
    """The file opened as ``format`` and its checked, normalised mapping; raises
    ``ImportRejected`` when the file cannot be read or the mapping does not fit it."""
    try:
        source = stream_file(opener, format)
        columns = source.columns
        if columns is None:
            columns = _columns(opener, source)
    except FileUnreadable as error:
        raise ImportRejected(error.problems) from error
    normalised, problems = normalise_mapping(
        effective_mapping(mapping or {}, format=format, columns=columns), columns=source.columns
    )
    if "response" not in normalised:
        problems.append(ImportProblem(None, "mapping.response", "map the response text"))
    if not problems:
        return source, normalised
    # A file that cannot be read is reported as such before its mapping (as when the whole file
    # was read first).
    try:
        empty = not any(True for _ in source.records)
    except FileUnreadable as error:
        raise ImportRejected(error.problems) from error
    if source.problems:
        raise ImportRejected(source.problems)
    if empty:
        raise ImportRejected([NO_RECORDS])
    raise ImportRejected(problems)


def _check_stream(
    source: SourceStream,
    checker: _Checker,
    tally: _Tally,
    writer: "_Writer | None",
    checks: "list[RecordCheck]",
) -> None:
    """Check every record as it is read, tally and write (``writer``) those that pass while the
    file has no problem; raises ``ImportRejected`` with the file's problems at the end. The
    ``checks`` later apps registered see each planned attempt once the importer's own checks
    pass, and the whole file at the end (``RecordCheck``)."""
    seen = False
    # A version whose plan reads sessions gets each attempt's typed columns, extracted here
    # once and written in the attempt's batch (``SessionColumns``); the checks reuse them.
    sessions = any(getattr(check, "session_columns", False) for check in checks)
    try:
        for record in source.records:
            seen = True
            planned = checker.plan(record)
            # After the first problem nothing more is planned or written, but every record is
            # still checked, so that the refusal lists all of them.
            if planned is None:
                continue
            if sessions:
                try:
                    planned.session = session_record(planned.raw, planned.terminal_outcome)
                except RecordError as error:
                    checker.problems.append(
                        ImportProblem(planned.row, error.field or "record", str(error))
                    )
            if not checker.problems:
                for check in checks:
                    checker.problems.extend(check.add(planned))
            if checker.problems or source.problems:
                continue
            tally.add(planned)
            if writer is not None:
                writer.add(planned)
    except FileUnreadable as error:
        raise ImportRejected(error.problems) from error
    if source.problems:
        raise ImportRejected(source.problems)
    if not seen:
        raise ImportRejected([NO_RECORDS])
    if not checker.problems:
        for check in checks:
            checker.problems.extend(check.finish())
    if checker.problems:
        raise ImportRejected(checker.problems)


class RecordCheck(Protocol):
    """A check a later app adds to every response import into the versions it concerns (seed
    002's: a record's sub-study and condition against the frozen schedule, task blocks whole,
    every tool name routed), through its version component's ``import_check``
    (``apps.protocols.components``). ``add`` sees each planned attempt (``row``,
    ``administration_id``, ``terminal_outcome``, ``raw``) as the file streams, once the
    importer's own checks of that record pass; ``finish`` sees the file as a whole. Each
    returns ImportProblems; any problem refuses the whole file, as the importer's own do.

    A check whose ``session_columns`` attribute is true asks for the session's typed columns:
    the importer extracts them (``planned.session``, refusing a record that cannot be read as a
    session, by field) and stores them beside the attempt (``SessionColumns``)."""

    def add(self, planned: _Planned) -> list[ImportProblem]: ...

    def finish(self) -> list[ImportProblem]: ...


def _record_checks_for(version: ProtocolVersion) -> list[RecordCheck]:
    return [
        check
        for component in registered_components()
        if component.import_check is not None
        and (check := component.import_check(version)) is not None
    ]


@transaction.atomic
@import_service
def responses_import(
    *,
    version: ProtocolVersion,
    user: User,
    data: "bytes | Path | UploadedFile[bytes]",
    filename: str,
    format: str | None = None,
    mapping: dict[str, Any] | None = None,
    note: str = "",
    dry_run: bool = False,
) -> ImportOutcome[ResponseImport]:
    """Import a file of attempts into the frozen ``version``: all of it, or nothing.

    ``data`` is the file's bytes, its path, or the upload (one Django spooled to disk is read
    from its temporary file): CSV and JSON Lines are read, checked and written a batch at a
    time, so the memory used does not grow with the file (issue #18: a 50 MB CSV in ≤ 300 MB of
    worker memory).

    Every record is checked before anything is written; any problem raises ``ImportRejected``
    (a ValidationError) naming each row and field, and nothing is written; a problem of the
    file as a whole names it (``import_service``). The same file (by SHA-256) imported twice
    into a version is a no-op that says when and by whom it was first imported. ``dry_run``
    checks and previews without writing. A successful import writes an ``import`` log entry, a
    ``platform_loss`` entry when the file holds platform losses and a ``rerun`` entry when it
    holds reruns. See ``docs/import-formats.md``.
    """
    version_require_open(
        version,
        draft=f"Responses attach only to a frozen version: {version} is a draft. Freeze it "
        "first, so that its schedule exists.",
        withdrawn=f"{version} has been withdrawn; it takes no more responses.",
    )
    opener = source_opener(data)
    digest = source_sha256(opener)

    def already() -> ImportOutcome[ResponseImport] | None:
        imports = ResponseImport.objects.filter(version=version)
        return already_imported(imports, digest, counted="attempts", noun="attempts")

    if outcome := already():
        return outcome
    format = file_format(format, filename)
    source, normalised = _opened(opener, format, mapping)
    # The attempt numbers below are only right if no other import into this version commits
    # in between.
    if outcome := version_lock(version, already):
        return outcome
    schedule = _Schedule(version)
    tally = _Tally(schedule)
    writer = None if dry_run else _Writer(version)
    checks = _record_checks_for(version)
    _check_stream(source, _Checker(schedule, normalised), tally, writer, checks)
    counts = tally.counts()
    if writer is None:
        return ImportOutcome(
            status="dry_run",
            message=f"Ready to import {filename}: {_summary(counts)}. Nothing was written.",
            counts=counts,
            preview=tally.preview(),
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
    writer.finish(response_import)
    _log(version, user, response_import, tally, schedule)
    return ImportOutcome(
        status="imported",
        message=f"Imported {filename}: {_summary(counts)}.",
        counts=counts,
        record=response_import,
        preview=tally.preview(),
    )


def _log(version, user, response_import, tally: _Tally, schedule) -> None:
    counts = response_import.counts
    refs = import_refs(version, "import", response_import)
    note = f" Note: {response_import.note}" if response_import.note else ""
    entries = [
        NewEntry(
            kind=EntryKind.IMPORT,
            rationale=(
                f"Imported {response_import.filename} ({response_import.format}, sha256 "
                f"{response_import.sha256}): {_summary(counts)}.{note}"
            ),
            actor=user,
            refs=refs,
        )
    ]
    if counts["platform_losses"]:
        entries.append(
            NewEntry(
                kind=EntryKind.PLATFORM_LOSS,
                rationale=(
                    f"{counts['platform_losses']} platform losses in {response_import.filename}: "
                    "infrastructure failures that never reached the model, counted apart from "
                    "model outcomes."
                ),
                actor=user,
                refs=refs,
            )
        )
    if tally.reruns:
        listed = ", ".join(
            f"{schedule.describe(administration_id)} attempt {number}"
            for administration_id, number in tally.first_reruns
        )
        more = f" and {tally.reruns - 50} more" if tally.reruns > 50 else ""
        entries.append(
            NewEntry(
                kind=EntryKind.RERUN,
                rationale=(
                    f"{tally.reruns} reruns in {response_import.filename}: {listed}{more}. "
                    f"The earlier attempts are kept.{note}"
                ),
                actor=user,
                refs=refs,
            )
        )
    # One lock, one read of the chain's head and one INSERT for the import's entries.
    deviation_append_many(protocol=version.protocol, entries=entries)
