"""The import of one file of machine scores, ``machine_scores_import`` (the service; callers import
it from ``apps.raters.services.machine`` with the other writes of machine scores): read it, check
every row, then write every score, in the frame every import shares
(``apps.protocols.import_frame``). The files are the response importer's
(``apps.responses.formats``: CSV, JSON Lines, Inspect AI logs read with inspect_ai's own reader),
and a row names its response as a response file names its attempt's administration
(``apps.responses.mapping``: position, or item, level, evaluand, repetition). The steps:

1. the version must be frozen and not withdrawn;
2. the same file (SHA-256) already imported into this version → a no-op that says so;
3. read the file and check the mapping: the scorer, the fields and how to reach each value;
4. lock the version row, so imports into one version take turns;
5. check every row: its response, its scorer (on the version's scorer roster), each field (one
   the scorer's role scores, by the rubric), each value (``score_values_clean``, exactly as a
   reviewer's value), no score twice; any problem → ``ImportRejected``, nothing written;
6. write the import record and the scores (COPY on PostgreSQL), and one log entry.

The mapping (a JSON object; every key optional):

``position`` / ``item`` / ``level`` / ``evaluand`` / ``repetition``
    how a row names its administration (sources as in ``apps.responses.mapping``; the default is
    the columns of those names, or Inspect's own fields);
``attempt``
    the attempt number (default: the administration's analysed attempt, the first that crossed
    the execution-evidence gate — ``apps.responses.models.analysed_attempt``; a row naming no
    attempt whose analysed attempt has no response while a rerun has one is refused, naming
    the row and ``attempt``);
``scorer``
    the scorer's roster code (a source; default: the ``scorer`` column, else the importer's
    choice, else the roster's only scorer);
``fields``
    ``{rubric field: source}`` (default: every column or key named like a field the scorers
    score);
``scores``
    Inspect logs: ``{score name: rubric field}`` or ``{score name: {"field": f, "values":
    {...}}}``, read from ``sample.scores[name].value`` (default: scores named like a field);
``confidence``
    the scorer's confidence in [0, 1], optional (a source; default: the ``confidence`` column
    or key of a CSV or JSON Lines row, which applies to every value of the row; for an Inspect
    log, each score's ``metadata.confidence``, since inspect_ai's ``Score`` has no confidence
    of its own and ``metadata`` is where a scorer puts what it adds to a value).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone

from apps.accounts.models import User
from apps.core.canonical import canonical_json
from apps.core.inputs import whole_number
from apps.core.rows import full_clean_save
from apps.deviations.models import EntryKind
from apps.deviations.services import deviation_append
from apps.items.models import KeyUnit
from apps.protocols.import_frame import (
    ImportOutcome,
    ImportProblem,
    ImportRejected,
    already_imported,
    import_key,
    import_refs,
    import_service,
    problems_refuse,
    version_lock,
    version_require_open,
)
from apps.protocols.models import ProtocolVersion
from apps.raters.judged import judged_signals_or_none
from apps.raters.models import (
    FieldKind,
    MachineScore,
    MachineScoreImport,
    RubricField,
    Scorer,
    ScorerRosterEntry,
    prompt_sha256_of,
)
from apps.raters.values import score_values_clean
from apps.responses.formats import SourceRecord, file_format, file_records, guess_format
from apps.responses.importing import _Checker, _Schedule
from apps.responses.mapping import (
    ADMINISTRATION_BY_KEY,
    compile_source,
    default_mapping,
)
from apps.responses.models import Attempt, analysed_attempt

PREVIEW_ROWS = 20
ADMINISTRATION_TARGETS = ("position", *ADMINISTRATION_BY_KEY)
OWN_TARGETS = ("attempt", "scorer", "fields", "scores", "confidence")
# Keys of a CSV or JSON Lines row that are never field names: how it names its response and
# scorer, and what it says beside the values (kept as the score's detail).
DETAIL_KEYS = ("detail", "explanation", "answer", "metadata", "note")
# Keys of a CSV or JSON Lines row that say which judge wrote its values: checked against the
# frozen identity of each scorer the row gives values from.
PROVENANCE_KEYS = ("judge_model", "judge_prompt_sha256")
# An Inspect scorer's parameters that are its identity's model and prompt, not its ``params``.
INSPECT_MODEL_PARAMS = ("model", "template")
# Inspect's own score constants (inspect_ai.scorer: CORRECT "C", INCORRECT "I"), read as true and
# false by a binary field unless the mapping says otherwise.
INSPECT_BINARY = {"C": True, "I": False}
_TRUE = {"1", "true", "yes", "y"}
_SOURCE_HELP = 'give a column, {"column": …} or {"const": …}'
_SCORE_HELP = 'give a field, or {"field": …, "scorer": …, "values": {…}}'
_FALSE = {"0", "false", "no", "n"}


@dataclass(slots=True)
class _Planned:
    row: int
    response_id: int
    scorer_id: int
    scorer_code: str
    field: str
    value: Any
    detail: dict[str, Any]
    administration: str
    confidence: float | None = None


def planned_score(
    record: SourceRecord,
    entry: ScorerRosterEntry,
    response_id: int,
    field: str,
    value: Any,
    detail: dict[str, Any],
    administration: str,
    confidence: float | None = None,
) -> _Planned:
    """The score ``entry``'s scorer gives ``field`` of a response, as ``record`` says."""
    return _Planned(
        row=record.row,
        response_id=response_id,
        scorer_id=entry.scorer_id,
        scorer_code=entry.code,
        field=field,
        value=value,
        detail=detail,
        administration=administration,
        confidence=confidence,
    )


def _source_keys(source: Any) -> set[str]:
    """The top-level keys of a record a source may read: a column's first dotted part (and the
    column itself: a key may hold a dot)."""
    column = source if isinstance(source, str) else None
    if isinstance(source, dict) and isinstance(source.get("column"), str):
        column = source["column"]
    return {column, column.split(".")[0]} if column else set()


def sample_keys(mapping: dict[str, Any]) -> set[str]:
    """The top-level fields of an Inspect sample an import with ``mapping`` reads: Inspect's own
    defaults (``id``, ``model``, ``epoch``, ``scores``) and every column the mapping names. An
    ``.eval`` log's samples are read for these alone (``formats.stream_inspect``): 25,000 whole
    samples, validated by inspect_ai, took most of a 100,000-score import."""
    keys = {"id", "model", "epoch", "scores"}
    for target in (*ADMINISTRATION_TARGETS, "attempt", "scorer", "confidence"):
        keys |= _source_keys(mapping.get(target))
    fields = mapping.get("fields")
    for source in fields.values() if isinstance(fields, dict) else ():
        keys |= _source_keys(source)
    scores = mapping.get("scores")
    for key in scores if isinstance(scores, dict) else ():
        keys |= _source_keys(key)
    return keys


def _describe(schedule: _Schedule, pk: int) -> str:
    position, item, level, evaluand_id, repetition = schedule.entries[pk]
    code = schedule.code_of.get(evaluand_id, f"evaluand {evaluand_id}")
    return f"#{position} ({item}@{level}, {code}, repetition {repetition})"


def _source_spec(source: Any) -> dict | None:
    spec = {"column": source} if isinstance(source, str) else source
    if not isinstance(spec, dict) or ("column" in spec) == ("const" in spec):
        return None
    if set(spec) - {"column", "const", "values", "replace_prefix"}:
        return None
    if "column" in spec and (not isinstance(spec["column"], str) or not spec["column"]):
        return None
    if "values" in spec and not isinstance(spec["values"], dict):
        return None
    return spec


def _frozen_provenance(scorer: Scorer) -> dict[str, str]:
    """What a file may say of a scorer's judge, as its frozen identity says it."""
    return {"judge_model": scorer.model, "judge_prompt_sha256": scorer.frozen_prompt_sha256}


def provenance_mismatches(
    scorer: Scorer, logged: dict[str, Any], model_roles: dict[str, str]
) -> list[tuple[str, Any, Any]]:
    """``(element, the log's value, the frozen identity's)`` for each element of what an Inspect
    log records of a scorer (``logged``: ``{"name", "options"}``, from ``eval.scorers``) that
    differs from ``scorer``'s frozen identity: its name; its parameters (``params``, the grader
    model and template apart); its grader model (the ``model`` parameter, else the log's
    ``grader`` model role), when the log records one; the SHA-256 of its judge template (the
    ``template`` parameter), when the log records one."""
    options = logged.get("options") or {}
    found: list[tuple[str, Any, Any]] = []
    if logged["name"] != scorer.name:
        found.append(("name", logged["name"], scorer.name))
    params = {k: v for k, v in options.items() if k not in INSPECT_MODEL_PARAMS}
    if canonical_json(params) != canonical_json(scorer.params or {}):
        found.append(("params", params, scorer.params or {}))
    model = options.get("model") or model_roles.get("grader")
    if isinstance(model, list) and len(model) == 1:
        model = model[0]
    if model is not None and model != scorer.model:
        found.append(("model", model, scorer.model))
    template = options.get("template")
    if isinstance(template, str):
        digest = prompt_sha256_of(template)
        frozen = scorer.frozen_prompt_sha256
        if digest != frozen:
            found.append(("prompt_sha256", digest, frozen))
    return found


def _text_value(field: RubricField, text: str) -> Any:
    """A CSV cell's text as the value a reviewer's form would give for the field's kind."""
    text = text.strip()
    if text == "":
        return None
    kind = field.kind
    try:
        if kind == FieldKind.BINARY:
            lowered = text.lower()
            return True if lowered in _TRUE else False if lowered in _FALSE else text
        if kind == FieldKind.COUNT:
            count = whole_number(text, signed=True)
            return text if count is None else count
        if kind == FieldKind.NUMBER:
            number = float(text)
            return int(number) if number.is_integer() and "." not in text else number
        if kind == FieldKind.CHECKLIST:
            value = json.loads(text) if text.startswith("[") else [int(p) for p in text.split(";")]
            return value
    except ValueError:
        return text
    return text


@dataclass(slots=True)
class _Channel:
    """One value a row gives: read at ``source`` (a column, or a key path into the record such
    as ``scores.multi.value.correct``) for the rubric ``field``, from the roster scorer
    ``scorer`` (None: the row's own scorer)."""

    source: str
    field: str
    read: Callable[[dict[str, Any]], tuple[Any, str | None]]
    scorer: str | None = None
    inspect_binary: bool = False
    values: dict | None = None

    def as_mapping(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "field": self.field,
            "scorer": self.scorer,
            **({"values": self.values} if self.values is not None else {}),
        }


class _Reader:
    """Resolves the mapping against the file, then checks rows one by one."""

    def __init__(
        self,
        *,
        version: ProtocolVersion,
        format: str,
        records: list[SourceRecord],
        columns: list[str] | None,
        mapping: dict[str, Any],
        header: dict[str, Any],
    ):
        self.version = version
        self.format = format
        self.records = records
        self.header = header
        self.problems: list[ImportProblem] = []
        self.planned: list[_Planned] = []
        self.fields = {
            f.name: f for f in RubricField.objects.filter(version=version).order_by("position")
        }
        self.roster = {
            e.code: e
            for e in ScorerRosterEntry.objects.filter(version=version).select_related("scorer")
        }
        self.columns = columns
        self.names: list[str] = (
            columns
            if columns is not None
            else sorted({key for record in records for key in record.fields})
        )
        for key in sorted(set(mapping) - set(ADMINISTRATION_TARGETS) - set(OWN_TARGETS)):
            targets = ", ".join((*ADMINISTRATION_TARGETS, *OWN_TARGETS))
            self._file_problem(f"mapping.{key}", f"is not a target; the targets are {targets}")
        self.administration_mapping = self._administration(mapping)
        self.attempt_source = self._attempt(mapping)
        # A field the mapping or a column names wrongly is the file's problem, and rows are
        # still checked; without a way to name each row's response and scorer, they cannot be.
        before = len(self.problems)
        self.channels = self._channels(mapping)
        channel_problems = self.problems[before:]
        del self.problems[before:]
        needs_scorer = any(c.scorer is None for c in self.channels) or not self.channels
        scorer = self._scorer(mapping) if needs_scorer else None
        self.rows_checkable = not self.problems
        self.problems.extend(channel_problems)
        if not self.channels and not channel_problems and self.rows_checkable:
            self._file_problem("mapping.fields", "no column names a field the scorers score")
        self.provenance_checked: set[tuple[str, str]] = set()
        confidence = self._confidence(mapping)
        self.normalised = {
            **self.administration_mapping,
            "scores": [c.as_mapping() for c in self.channels],
            **({"scorer": scorer} if scorer is not None else {}),
            **({"confidence": confidence} if confidence else {}),
        }

    def _file_problem(self, where: str, message: str) -> None:
        self.problems.append(ImportProblem(None, where, message))

    def _field_problem(self, name: str, column: str | None, message: str) -> None:
        """A field that cannot be imported: the file's problem when the file names it as a
        whole (a CSV header column, the mapping, a key on every record), else the problem of
        each record that carries a value for it (a JSON Lines key on some rows only)."""
        carrying = (
            [r for r in self.records if r.fields.get(column) not in (None, "")]
            if column is not None and self.columns is None and self.defaulted
            else []
        )
        if not carrying or len(carrying) == len(self.records):
            self._file_problem(name, message)
            return
        for record in carrying:
            self._row_problem(record, name, message)

    # -- the mapping ------------------------------------------------------------------------

    def _administration(self, mapping: dict[str, Any]) -> dict[str, dict]:
        chosen = {
            t: s
            for t, s in default_mapping(self.format, self.names).items()
            if t in ADMINISTRATION_TARGETS
        }
        chosen.update({t: mapping[t] for t in ADMINISTRATION_TARGETS if t in mapping})
        if mapping.get("position") is not None:
            for target in ADMINISTRATION_BY_KEY:
                if target not in mapping:
                    chosen.pop(target, None)
        normalised: dict[str, dict] = {}
        for target, source in chosen.items():
            if source is None:
                continue
            spec = _source_spec(source)
            if spec is None:
                self._file_problem(f"mapping.{target}", _SOURCE_HELP)
            else:
                normalised[target] = spec
        if "position" not in normalised and not {"item", "evaluand"} <= set(normalised):
            self._file_problem(
                "mapping",
                "name each row's response: map position, or item and evaluand (and level "
                "and repetition unless the design has one of each)",
            )
        return normalised

    def _attempt(self, mapping: dict[str, Any]) -> Any:
        attempt = mapping.get("attempt", "attempt" if "attempt" in self.names else None)
        if attempt is None:
            return None
        spec = _source_spec(attempt)
        if spec is None:
            self._file_problem("mapping.attempt", _SOURCE_HELP)
            return None
        return compile_source(spec)

    def _scorer(self, mapping: dict[str, Any]) -> dict | None:
        scorer = mapping.get("scorer")
        if scorer is None and "scorer" in self.names:
            scorer = "scorer"
        if scorer is None and len(self.roster) == 1:
            scorer = {"const": next(iter(self.roster))}
        self.scorer_source = None
        if scorer is None:
            codes = ", ".join(self.roster) or "the roster is empty"
            self._file_problem(
                "scorer", f"say which scorer these scores are from (a roster code: {codes})"
            )
            return None
        spec = _source_spec(scorer)
        if spec is None:
            self._file_problem("mapping.scorer", _SOURCE_HELP)
            return None
        self.scorer_source = compile_source(spec)
        return spec

    def _confidence(self, mapping: dict[str, Any]) -> dict[str, dict]:
        """``{channel source: confidence source}`` of each channel's confidence (see the module's
        docstring): the mapping's ``confidence`` or a row's ``confidence`` column for every
        channel, or, in an Inspect log, each score's own ``metadata.confidence``."""
        given = mapping.get("confidence")
        if given is None and self.format != "inspect" and "confidence" in self.names:
            given = "confidence"
        chosen: dict[str, dict] = {}
        if given is not None:
            spec = _source_spec(given)
            if spec is None:
                self._file_problem("mapping.confidence", _SOURCE_HELP)
            else:
                chosen = {c.source: spec for c in self.channels}
        elif self.format == "inspect":
            for channel in self.channels:
                if channel.source.startswith("scores."):
                    score = channel.source.split(".")[1]
                    chosen[channel.source] = {"column": f"scores.{score}.metadata.confidence"}
        self.confidence_sources = {
            (c.scorer, c.field): compile_source(chosen[c.source])
            for c in self.channels
            if c.source in chosen
        }
        return chosen

    def _row_confidence(self, record: SourceRecord) -> dict[tuple[str | None, str], float]:
        """The row's confidence per (channel scorer, field); a value that is not a number in
        [0, 1] is the row's problem (named once, however many values it applies to)."""
        out: dict[tuple[str | None, str], float] = {}
        refused: set[str] = set()
        for key, source in self.confidence_sources.items():
            raw, issue = source(record.fields)
            if raw is None or raw == "":
                continue
            number = None
            if not isinstance(raw, bool):
                try:
                    number = float(str(raw).strip()) if isinstance(raw, str) else float(raw)
                except (TypeError, ValueError):
                    number = None
            if issue or number is None or not 0.0 <= number <= 1.0:
                message = issue or f"{raw!r} is not a confidence: give a number from 0 to 1"
                if message not in refused:
                    refused.add(message)
                    self._row_problem(record, "confidence", message)
                continue
            out[key] = number
        return out

    def _channels(self, mapping: dict[str, Any]) -> list[_Channel]:
        self.scorer_source = None
        given, scores = mapping.get("fields"), mapping.get("scores")
        # Fields found in the file's keys (not named by the mapping): one a record carries is
        # that record's problem when it is wrong.
        self.defaulted = given is None and scores is None
        channels = self._default_channels() if self.defaulted else self._given(given, scores)
        return self._machine_fields_only(channels)

    def _channel(
        self,
        source: str,
        field: str,
        *,
        scorer: str | None = None,
        values: dict | None = None,
        inspect_binary: bool = False,
    ) -> _Channel:
        spec: dict[str, Any] = {"column": source}
        if values is not None:
            spec["values"] = values
        return _Channel(
            source=source,
            field=field,
            read=compile_source(spec),
            scorer=scorer,
            inspect_binary=inspect_binary and values is None,
            values=values,
        )

    def _score_source(self, key: str) -> str:
        """Where a ``scores`` entry reads its value: a key path as given (``scores.multi.value.
        correct``, a JSON Lines ``verdicts.loss1``); an Inspect score's name alone reads its
        value (``scores.<name>.value``); a CSV or JSON Lines column as named."""
        if "." in key or (self.format != "inspect" and key in self.names):
            return key
        return f"scores.{key}.value"

    def _given(self, given: Any, scores: Any) -> list[_Channel]:
        channels: list[_Channel] = []
        if given is not None and not isinstance(given, dict):
            self._file_problem("mapping.fields", "give {field: source}")
            given = {}
        if scores is not None and not isinstance(scores, dict):
            self._file_problem("mapping.scores", "give {score or column: field}")
            scores = {}
        for name, source in (given or {}).items():
            spec = _source_spec(source)
            if spec is None:
                self._file_problem(f"mapping.fields.{name}", _SOURCE_HELP)
            else:
                channels.append(
                    _Channel(
                        source=spec.get("column", ""),
                        field=name,
                        read=compile_source(spec),
                        values=spec.get("values"),
                    )
                )
        for key, target in (scores or {}).items():
            where = f"mapping.scores.{key}"
            spec = {"field": target} if isinstance(target, str) else target
            if not isinstance(spec, dict) or not isinstance(spec.get("field"), str):
                self._file_problem(where, _SCORE_HELP)
                continue
            if unknown := set(spec) - {"field", "scorer", "values"}:
                self._file_problem(where, f"unknown option(s) {', '.join(sorted(unknown))}")
                continue
            values, scorer = spec.get("values"), spec.get("scorer")
            if values is not None and not isinstance(values, dict):
                self._file_problem(where, "values must be an object {from: to}")
                continue
            if scorer is not None and scorer not in self.roster:
                known = ", ".join(self.roster) or "none"
                self._file_problem(
                    where, f"{scorer!r} is not on this version's scorer roster ({known})"
                )
                continue
            channels.append(
                self._channel(
                    self._score_source(key),
                    spec["field"],
                    scorer=scorer,
                    values=values,
                    inspect_binary=True,
                )
            )
        return channels

    def _default_channels(self) -> list[_Channel]:
        if self.format == "inspect":
            channels = []
            names = sorted(
                {name for record in self.records for name in (record.fields.get("scores") or {})}
            )
            for name in names:
                if name not in self.fields:
                    self._file_problem(
                        f"scores.{name}",
                        f"the rubric has no field {name!r}; map the score to a field with "
                        f'{{"scores": {{"{name}": "<field>"}}}} (a dict-valued score key by '
                        f'key: {{"scores.{name}.value.<key>": "<field>"}})',
                    )
                    continue
                channels.append(self._channel(f"scores.{name}.value", name, inspect_binary=True))
            return channels
        reserved = set(ADMINISTRATION_TARGETS) | {"attempt", "scorer", "confidence"}
        reserved |= set(DETAIL_KEYS) | set(PROVENANCE_KEYS)
        reserved |= {s["column"] for s in self.administration_mapping.values() if "column" in s}
        return [self._channel(name, name) for name in self.names if name not in reserved]

    def _machine_fields_only(self, channels: list[_Channel]) -> list[_Channel]:
        kept = []
        for channel in channels:
            name = channel.field
            column = channel.source if self.defaulted else None
            field = self.fields.get(name)
            if field is None:
                self._field_problem(name, column, f"the rubric has no field {name!r}")
            elif field.derivation or not field.scorer_scores:
                why = "is derived" if field.derivation else "is scored by reviewers only"
                self._field_problem(name, column, f"field {name!r} {why}: no scorer scores it")
            else:
                kept.append(channel)
        return kept

    # -- provenance ---------------------------------------------------------------------------

    def _log_provenance(self, channel: _Channel, entry: ScorerRosterEntry) -> None:
        """Once per Inspect score and roster scorer: what the log records of the scorer that
        wrote the score (``inspect_scorer_provenance``) against its frozen identity."""
        if self.format != "inspect" or not channel.source.startswith("scores."):
            return
        name = channel.source.split(".")[1]
        if (name, entry.code) in self.provenance_checked:
            return
        self.provenance_checked.add((name, entry.code))
        logged = next((s for s in self.header.get("scorers") or [] if s["name"] == name), None)
        if logged is None:
            return
        for element, said, frozen in provenance_mismatches(
            entry.scorer, logged, self.header.get("model_roles") or {}
        ):
            self._file_problem(
                f"scores.{name} ({element})",
                f"the log records {said!r}; the frozen identity of the scorer {entry.code!r} "
                f"says {frozen!r}",
            )

    def _row_provenance(self, record: SourceRecord, entries: list[ScorerRosterEntry]) -> None:
        """A CSV or JSON Lines row's ``judge_model`` and ``judge_prompt_sha256`` against the
        frozen identity of each scorer it gives values from."""
        for column in PROVENANCE_KEYS:
            said = record.fields.get(column)
            if said in (None, ""):
                continue
            said = str(said).strip()
            # A hash is the same hash in either case of hex digit (the frozen one is lowercase).
            compared = said.lower() if column == "judge_prompt_sha256" else said
            for entry in entries:
                frozen = _frozen_provenance(entry.scorer)[column]
                if compared != frozen:
                    self._row_problem(
                        record,
                        column,
                        f"{said!r} is not the frozen identity's {frozen or '(none)'!r} "
                        f"(scorer {entry.code!r})",
                    )

    # -- the rows -------------------------------------------------------------------------

    def _load(self, schedule: _Schedule) -> None:
        version_id = self.version.pk
        self.responses: dict[int, list[tuple[int, int, int, int]]] = defaultdict(list)
        # administration → its analysed attempt (number, outcome): the first that crossed the
        # execution-evidence gate, which a row naming no attempt scores (CRUCIBLE §4, §10).
        attempts: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for administration_id, number, response_id, words, cell_id, gate, outcome in (
            Attempt.objects.filter(version_id=version_id)
            .order_by("administration_id", "number")
            .values_list(
                "administration_id",
                "number",
                "response__pk",
                "response__word_count",
                "administration__cell_id",
                "evidence_gate",
                "terminal_outcome",
            )
        ):
            attempts[administration_id].append(
                {"number": number, "evidence_gate": gate, "terminal_outcome": outcome}
            )
            if response_id is not None:
                self.responses[administration_id].append((number, response_id, words, cell_id))
        self.analysed: dict[int, tuple[int, str]] = {}
        for administration_id, listed in attempts.items():
            chosen = analysed_attempt(listed)
            if chosen is not None:
                self.analysed[administration_id] = (chosen["number"], chosen["terminal_outcome"])
        self.needs_units = any(
            self.fields[c.field].kind == FieldKind.CHECKLIST for c in self.channels
        )
        self.units: dict[int, list[tuple[int, bool]]] = defaultdict(list)
        if self.needs_units:
            for cell_id, position, executable in (
                KeyUnit.objects.filter(version_id=version_id)
                .order_by("cell_id", "position")
                .values_list("cell_id", "position", "executable")
            ):
                self.units[cell_id].append((position, executable))
        self.existing = set(
            MachineScore.objects.filter(version_id=version_id).values_list(
                "scorer_id", "response_id", "field"
            )
        )
        self.seen: dict[tuple[int, int, str], int] = {}
        # The derived fields that follow a field a scorer gives (computed as for reviewers).
        self.derived_of: dict[str, list[RubricField]] = defaultdict(list)
        for f in self.fields.values():
            if f.derivation:
                self.derived_of[f.derived_from].append(f)
        self.schedule = schedule

    def check(self, schedule: _Schedule, done: set[tuple[str, str]]) -> None:
        """Check every row; ``done`` holds the (scorer code, field) pairs an earlier import of
        the same file wrote, skipped here (counted in ``skipped``)."""
        self._load(schedule)
        self.done, self.skipped = done, Counter[tuple[str, str]]()
        checker = _Checker(schedule, self.administration_mapping)
        for record in self.records:
            administration_id = checker.administration_into(record, self.problems)
            entry = self._row_scorer(record) if self.scorer_source is not None else None
            response = (
                None if administration_id is None else self._row_response(record, administration_id)
            )
            groups, ok = self._row_values(record, entry)
            confidence = self._row_confidence(record) if self.confidence_sources else {}
            given = [g[0] for g in groups.values() if g[0] is not None]
            if self.format != "inspect":
                self._row_provenance(record, given)
            if administration_id is None or response is None or not ok or not groups:
                self._values_alone(record, {k: v for g in groups.values() for k, v in g[1].items()})
                continue
            for code, (scorer, values) in groups.items():
                if scorer is None:
                    self._values_alone(record, values)
                else:
                    own = {f: c for (sc, f), c in confidence.items() if sc == code}
                    self._plan(record, administration_id, response, scorer, values, own)

    def _values_alone(self, record: SourceRecord, values: dict[str, Any]) -> None:
        """Check a refused row's values on their own (each against its field's domain), so that
        a row naming no response still shows every problem in it; a checklist, whose units are
        the response's cell's, and the derived fields wait for the response."""
        given = {
            name: value
            for name, value in values.items()
            if value is not None and self.fields[name].kind != FieldKind.CHECKLIST
        }
        if not given:
            return
        try:
            score_values_clean(
                fields=[self.fields[name] for name in given],
                values=given,
                word_count=0,
                units=[],
                defaults=False,
            )
        except ValidationError as error:
            for name, messages in error.message_dict.items():
                for message in messages:
                    self._row_problem(record, name, message)

    def _row_problem(self, record: SourceRecord, where: str, message: str) -> None:
        self.problems.append(ImportProblem(record.row, where, message, record.label))

    def _row_scorer(self, record: SourceRecord) -> ScorerRosterEntry | None:
        if self.scorer_source is None:
            return None
        code, issue = self.scorer_source(record.fields)
        code = "" if code is None else str(code).strip()
        entry = self.roster.get(code)
        if issue:
            self._row_problem(record, "scorer", issue)
        elif entry is None:
            known = ", ".join(self.roster) or "none"
            self._row_problem(
                record, "scorer", f"{code!r} is not on this version's scorer roster ({known})"
            )
        return entry if not issue else None

    def _row_response(self, record: SourceRecord, administration_id: int) -> tuple | None:
        answered = self.responses.get(administration_id, [])
        wanted = None
        if self.attempt_source is not None:
            raw, _ = self.attempt_source(record.fields)
            if raw not in (None, ""):
                try:
                    wanted = int(str(raw).strip())
                except ValueError:
                    self._row_problem(record, "attempt", f"{raw!r} is not an attempt number")
                    return None
        if wanted is None:
            # The analysed attempt's response: after an error that crossed the gate and a rerun,
            # the error's (CRUCIBLE §10), never the rerun's. When the analysed attempt has no
            # response, a rerun's would be scored but never analysed: the row must say which.
            analysed = self.analysed.get(administration_id)
            response = (
                next((a for a in answered if a[0] == analysed[0]), None) if analysed else None
            )
            if analysed and response is None and answered:
                where = _describe(self.schedule, administration_id)
                self._row_problem(
                    record,
                    "attempt",
                    f"administration {where}'s analysed attempt (attempt {analysed[0]}, "
                    f"{analysed[1]}: the first that crossed the execution-evidence gate) has "
                    f"no response, and the attempts with one "
                    f"({', '.join(str(a[0]) for a in answered)}) are never analysed: name the "
                    "attempt to score one",
                )
                return None
        else:
            response = next((a for a in answered if a[0] == wanted), None)
        if response is None:
            which = f"attempt {wanted} of " if wanted is not None else ""
            where = _describe(self.schedule, administration_id)
            self._row_problem(
                record, "response", f"{which}administration {where} has no response to score"
            )
        return response

    def _row_values(
        self, record: SourceRecord, row_scorer: ScorerRosterEntry | None
    ) -> tuple[dict[str | None, tuple[ScorerRosterEntry | None, dict[str, Any]]], bool]:
        """The row's values by scorer (a channel's own roster code, or None for the row's
        scorer): ``{code: (roster entry or None, {field: value})}``, those with a problem left
        out, and whether it had none."""
        groups: dict[str | None, tuple[ScorerRosterEntry | None, dict[str, Any]]] = {}
        ok = True
        for channel in self.channels:
            name = channel.field
            value, issue = channel.read(record.fields)
            field = self.fields[name]
            if issue:
                self._row_problem(record, name, issue)
                ok = False
                continue
            if isinstance(value, str):
                if "\x00" in value:
                    self._row_problem(record, name, "contains a NUL character")
                    ok = False
                    continue
                value = self._typed(field, value, channel)
            if value is None:
                continue  # the row gives no value for this field: nothing to check or write
            if isinstance(value, dict) and field.kind != FieldKind.SIGNALS:
                keys = ", ".join(sorted(map(str, value)))
                self._row_problem(
                    record,
                    name,
                    f"{channel.source} holds several values ({keys}): map one key to the "
                    f"field, {channel.source}.<key>",
                )
                ok = False
                continue
            entry = self.roster[channel.scorer] if channel.scorer else row_scorer
            if entry is not None and field.scorer_role != entry.role:
                self._row_problem(
                    record,
                    name,
                    f"the scorer {entry.code!r} has the role {entry.role!r}; the rubric gives "
                    f"{name!r} to the role {field.scorer_role!r}",
                )
                ok = False
                continue
            if entry is not None:
                self._log_provenance(channel, entry)
            group = groups.setdefault(channel.scorer, (entry, {}))
            group[1][name] = value
        return groups, ok

    def _typed(self, field: RubricField, value: str, channel: _Channel) -> Any:
        if self.format == "csv":
            return _text_value(field, value)
        if (
            self.format == "inspect"
            and channel.inspect_binary
            and field.kind == FieldKind.BINARY
            and value in INSPECT_BINARY
        ):
            return INSPECT_BINARY[value]
        return value

    def _plan(
        self,
        record: SourceRecord,
        administration_id: int,
        response: tuple,
        entry: ScorerRosterEntry,
        values: dict[str, Any],
        confidence: dict[str, float],
    ) -> None:
        _, response_id, words, cell_id = response
        subset = [self.fields[name] for name in values]
        subset += [d for name in values for d in self.derived_of.get(name, [])]
        try:
            cleaned = score_values_clean(
                fields=subset,
                values=values,
                word_count=words,
                units=self.units.get(cell_id, []) if self.needs_units else [],
                defaults=False,
            )
        except ValidationError as error:
            for name, messages in error.message_dict.items():
                for message in messages:
                    self._row_problem(record, name, message)
            return
        detail = self._detail(record)
        where = _describe(self.schedule, administration_id)
        for name, value in cleaned.items():
            if value is None:
                continue
            if (entry.code, name) in self.done:
                self.skipped[(entry.code, name)] += 1
                continue
            key = (entry.scorer_id, response_id, name)
            if key in self.existing:
                self._row_problem(
                    record,
                    name,
                    f"the scorer {entry.code!r} already scored {name!r} of {where} in an "
                    "earlier import",
                )
            elif key in self.seen:
                self._row_problem(
                    record,
                    name,
                    f"duplicate: row {self.seen[key]} of this file already gives the scorer "
                    f"{entry.code!r}'s {name!r} of {where}",
                )
            else:
                self.seen[key] = record.row
                self.planned.append(
                    planned_score(
                        record,
                        entry,
                        response_id,
                        name,
                        value,
                        detail,
                        where,
                        confidence.get(name),
                    )
                )

    def _detail(self, record: SourceRecord) -> dict[str, Any]:
        if self.format == "inspect":
            scores = record.fields.get("scores") or {}
            return {
                name: {k: score.get(k) for k in ("answer", "explanation") if score.get(k)}
                for name, score in scores.items()
                if isinstance(score, dict)
            }
        return {k: record.fields[k] for k in DETAIL_KEYS if record.fields.get(k) not in (None, "")}


def with_scorer(mapping: dict | None, scorer_code: str | None) -> dict | None:
    """``mapping`` with every row's scorer set to the roster code ``scorer_code`` (when given):
    how the form, the API and the command pass "these are all from this scorer"."""
    if not scorer_code:
        return mapping
    return {**(mapping or {}), "scorer": {"const": scorer_code}}


def _counts(planned: list[_Planned], rows: int) -> dict[str, Any]:
    return {
        "rows": rows,
        "scores": len(planned),
        "responses": len({p.response_id for p in planned}),
        "by_scorer": dict(sorted(Counter(p.scorer_code for p in planned).items())),
        "by_field": dict(sorted(Counter(p.field for p in planned).items())),
    }


def _summary(counts: dict[str, Any]) -> str:
    fields = ", ".join(f"{name} {n}" for name, n in counts["by_field"].items())
    scorers = ", ".join(counts["by_scorer"])
    return (
        f"{counts['scores']} machine scores of {counts['responses']} responses from "
        f"{counts['rows']} rows, by scorer {scorers or '—'} ({fields or 'no fields'})"
    )


def _preview(planned: list[_Planned]) -> list[dict[str, Any]]:
    return [
        {
            "row": p.row,
            "administration": p.administration,
            "scorer": p.scorer_code,
            "field": p.field,
            "value": p.value,
        }
        for p in planned[:PREVIEW_ROWS]
    ]


_JSON = json.JSONEncoder(ensure_ascii=False)


def _write(record: MachineScoreImport, planned: list[_Planned]) -> None:
    version_id = record.version_id
    if connection.vendor != "postgresql":
        MachineScore.objects.bulk_create(
            [
                MachineScore(
                    version_id=version_id,
                    response_id=p.response_id,
                    scorer_id=p.scorer_id,
                    field=p.field,
                    value=p.value,
                    detail=p.detail,
                    source=record,
                    source_row=p.row,
                    confidence=p.confidence,
                )
                for p in planned
            ],
            batch_size=5000,
        )
        return
    # COPY, as the response importer does: several times faster than INSERT, same transaction.
    # Rows are written in COPY's text format directly: every column is an integer, a slug, a
    # timestamp or JSON (which escapes tabs, newlines and control characters itself), so only
    # backslashes need doubling; a row's detail, shared by its fields, is encoded once.
    now = timezone.now().isoformat()
    tail = f"\t{record.pk}\t\\N\t"
    last_detail: tuple[int, str] = (0, "")
    with (
        connection.cursor() as cursor,
        cursor.copy(
            "COPY raters_machinescore (version_id, response_id, scorer_id, field, value, detail, "
            "source_id, oracle_run_id, source_row, created_at, confidence) FROM STDIN"
        ) as copy,
    ):
        for start in range(0, len(planned), 5000):
            out = []
            for p in planned[start : start + 5000]:
                if last_detail[0] != id(p.detail):
                    last_detail = (id(p.detail), _JSON.encode(p.detail).replace("\\", "\\\\"))
                value = _JSON.encode(p.value).replace("\\", "\\\\")
                confidence = "\\N" if p.confidence is None else repr(p.confidence)
                out.append(
                    f"{version_id}\t{p.response_id}\t{p.scorer_id}\t{p.field}\t{value}\t"
                    f"{last_detail[1]}{tail}{p.row}\t{now}\t"
                    f"{confidence}\n"
                )
            copy.write("".join(out))


def version_require_scorable(version: ProtocolVersion) -> None:
    """Raise ValidationError unless ``version`` takes machine scores (frozen, not withdrawn)."""
    version_require_open(
        version,
        draft=f"Machine scores attach only to a frozen version's responses: {version} is a draft.",
        withdrawn=f"{version} has been withdrawn; it takes no more scores.",
    )


def machine_import_begin(
    version: ProtocolVersion, data: bytes
) -> tuple[str, Callable[[], ImportOutcome[MachineScoreImport] | None]]:
    """Refuse a version that takes no scores; return the file's key and the check that it was
    already imported into ``version`` (as machine scores or a judge's verdicts): the no-op
    outcome, or None."""
    version_require_scorable(version)
    digest = import_key(data)
    imports = MachineScoreImport.objects.filter(version=version)

    def already() -> ImportOutcome[MachineScoreImport] | None:
        return already_imported(imports, digest, counted="scores", noun="machine scores")

    return digest, already


def _earlier_pairs(
    version: ProtocolVersion, digest: str
) -> dict[tuple[str, str], MachineScoreImport]:
    """The (scorer code, field) pairs earlier imports of the file keyed ``digest`` wrote into
    ``version``, each with the import that wrote it."""
    found: dict[tuple[str, str], MachineScoreImport] = {}
    for earlier in MachineScoreImport.objects.filter(version=version, sha256=digest).order_by(
        "imported_at"
    ):
        for code, field in earlier.pairs:
            found.setdefault((code, field), earlier)
    return found


def _skipped_message(digest: str, skipped: Counter, done: dict) -> str:
    pairs = ", ".join(
        f"{code}/{field} ({n} scores, import of {done[(code, field)].imported_at:%Y-%m-%d %H:%M}"
        f" UTC)"
        for (code, field), n in sorted(skipped.items())
    )
    return f"this file (sha256 {digest[:16]}…) already gave {pairs}"


@transaction.atomic
@import_service
def machine_scores_import(
    *,
    version: ProtocolVersion,
    user: User,
    data: bytes,
    filename: str,
    format: str | None = None,
    mapping: dict[str, Any] | None = None,
    note: str = "",
    dry_run: bool = False,
) -> ImportOutcome[MachineScoreImport]:
    """Import a file of machine scores onto the frozen ``version``'s responses: all or nothing.

    ``format`` is csv, jsonl or inspect (from the file name when None); ``mapping`` says how rows
    name their response, scorer and fields (the module docstring; ``with_scorer`` names one
    roster scorer for every row). Every row is checked before anything is written: unknown
    response, unknown field, a field the scorer's role does not score, a value outside the
    field's domain (checked as a reviewer's value is), a duplicate, a scorer not on the roster —
    any problem raises ``ImportRejected`` naming each row and field, and nothing is written; a
    problem of the file as a whole names it (``import_service``). Idempotent by (file SHA-256,
    scorer, field): one log may feed several scorers, each in its own import, and the pairs an
    earlier import of the same file wrote are skipped (all of them: a no-op that says so).
    Writes one ``import`` log entry naming the scorers, the file's SHA-256 and the counts.
    """
    judged = judged_signals_or_none()
    if (
        judged is not None
        and judged.judged_by_scorer(version)
        and (format or guess_format(filename)) == "jsonl"
    ):
        # Seed 003: an LLM judge's loss1 documents, validated and re-derived on the way in.
        scorer = (mapping or {}).get("scorer")
        return judged.judge_import(
            version=version,
            user=user,
            data=data,
            filename=filename,
            scorer_code=scorer.get("const") if isinstance(scorer, dict) else scorer,
            note=note,
            dry_run=dry_run,
        )
    digest, _ = machine_import_begin(version, data)

    def whole_file() -> ImportOutcome[MachineScoreImport] | None:
        # An import recorded before pairs were (or one that wrote nothing) stands for the file.
        legacy = MachineScoreImport.objects.filter(version=version, sha256=digest, pairs=[])
        return already_imported(legacy, digest, counted="scores", noun="machine scores")

    if outcome := whole_file():
        return outcome
    format = file_format(format, filename)
    if mapping is not None and not isinstance(mapping, dict):
        raise ImportRejected([ImportProblem(None, "mapping", "must be a JSON object")])
    source = file_records(data, format, sample_keys(mapping or {}))
    reader = _Reader(
        version=version,
        format=format,
        records=source.records,
        columns=source.columns,
        mapping=mapping or {},
        header=source.header,
    )
    if not reader.rows_checkable:
        problems_refuse(reader.problems)
    if outcome := version_lock(version, whole_file):
        return outcome
    done = _earlier_pairs(version, digest)
    reader.check(_Schedule(version), set(done))
    problems_refuse(reader.problems)
    planned = reader.planned
    counts = _counts(planned, len(source.records))
    skipped = _skipped_message(digest, reader.skipped, done) if reader.skipped else ""
    if reader.skipped and not planned:
        earlier = done[next(iter(sorted(reader.skipped)))]
        return ImportOutcome(
            status="already_imported",
            message=f"Nothing to do: {skipped}. Nothing was written.",
            counts=earlier.counts,
            record=earlier,
        )
    also = f" Skipped: {skipped}." if skipped else ""
    if dry_run:
        return ImportOutcome(
            status="dry_run",
            message=f"Ready to import {filename}: {_summary(counts)}.{also} Nothing was written.",
            counts=counts,
            preview=_preview(planned),
        )
    record = machine_import_record(
        version=version,
        user=user,
        planned=planned,
        sha256=digest,
        filename=filename,
        format=format,
        mapping=reader.normalised,
        header=source.header,
        note=note,
        counts=counts,
        rationale=lambda record: _rationale(record, reader),
    )
    return ImportOutcome(
        status="imported",
        message=f"Imported {filename}: {_summary(counts)}.{also}",
        counts=counts,
        record=record,
        preview=_preview(planned),
    )


def machine_import_record(
    *,
    version: ProtocolVersion,
    user,
    planned: list[_Planned],
    filename: str,
    note: str,
    rationale: Callable[[MachineScoreImport], str],
    **fields: Any,
) -> MachineScoreImport:
    """Write the import record (``fields``: sha256, format, mapping, counts, header; ``pairs``,
    the (scorer code, field) pairs of ``planned``, its idempotency key with the hash), its
    ``planned`` scores and its ``import`` log entry (``rationale(record)``), naming the version
    and the record (``import_refs``); runs inside the import's transaction."""
    pairs = sorted({(p.scorer_code, p.field) for p in planned})
    record = MachineScoreImport(
        version=version,
        filename=filename[:255],
        note=note.strip(),
        imported_by=user,
        pairs=[list(pair) for pair in pairs],
        **fields,
    )
    full_clean_save(record)
    _write(record, planned)
    deviation_append(
        protocol=version.protocol,
        kind=EntryKind.IMPORT,
        rationale=rationale(record),
        actor=user,
        refs=import_refs(version, "machine_score_import", record),
    )
    return record


def _rationale(record: MachineScoreImport, reader: _Reader) -> str:
    used = [reader.roster[code] for code in record.counts["by_scorer"]]
    scorers = "; ".join(
        f"{e.code} = {e.scorer.label} ({e.scorer.get_kind_display()} {e.scorer.name} "
        f"{e.scorer.version}, identity {e.scorer.identity_sha256})"
        for e in used
    )
    note = f" Note: {record.note}" if record.note else ""
    return (
        f"Imported machine scores from {record.filename} ({record.format}, sha256 "
        f"{record.sha256}): {_summary(record.counts)}. Scorers: {scorers}.{note}"
    )
