"""The import of one file of machine scores: read it, check every row, then write every score.

Called by ``services.machine.machine_scores_import`` inside its transaction. The files are the
response importer's (``apps.responses.formats``: CSV, JSON Lines, Inspect AI logs read with
inspect_ai's own reader), and a row names its response as a response file names its attempt's
administration (``apps.responses.mapping``: position, or item, level, evaluand, repetition). The
steps:

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
    the attempt number (default: the administration's latest attempt with a response);
``scorer``
    the scorer's roster code (a source; default: the ``scorer`` column, else the importer's
    choice, else the roster's only scorer);
``fields``
    ``{rubric field: source}`` (default: every column or key named like a field the scorers
    score);
``scores``
    Inspect logs: ``{score name: rubric field}`` or ``{score name: {"field": f, "values":
    {...}}}``, read from ``sample.scores[name].value`` (default: scores named like a field).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection
from django.utils import timezone

from apps.core.canonical import sha256_hex
from apps.deviations.models import EntryKind
from apps.deviations.services import deviation_append
from apps.items.models import KeyUnit
from apps.protocols.models import ProtocolVersion, VersionState
from apps.raters.models import (
    FieldKind,
    MachineScore,
    MachineScoreImport,
    RubricField,
    ScorerRosterEntry,
)
from apps.raters.values import score_values_clean
from apps.responses.formats import (
    FileUnreadable,
    ImportProblem,
    SourceRecord,
    guess_format,
    read_file,
)
from apps.responses.importing import ImportRejected, _Checker, _Schedule
from apps.responses.mapping import (
    ADMINISTRATION_BY_KEY,
    compile_source,
    default_mapping,
)
from apps.responses.models import Attempt

PREVIEW_ROWS = 20
ADMINISTRATION_TARGETS = ("position", *ADMINISTRATION_BY_KEY)
OWN_TARGETS = ("attempt", "scorer", "fields", "scores")
# Keys of a CSV or JSON Lines row that are never field names: how it names its response and
# scorer, and what it says beside the values (kept as the score's detail).
DETAIL_KEYS = ("detail", "explanation", "answer", "metadata", "note")
# Inspect's own score constants (inspect_ai.scorer: CORRECT "C", INCORRECT "I"), read as true and
# false by a binary field unless the mapping says otherwise.
INSPECT_BINARY = {"C": True, "I": False}
_TRUE = {"1", "true", "yes", "y"}
_SOURCE_HELP = 'give a column, {"column": …} or {"const": …}'
_SCORE_HELP = 'give a field, or {"field": …, "values": {…}}'
_FALSE = {"0", "false", "no", "n"}


@dataclass
class MachineImportOutcome:
    """What an import did: ``imported``, ``already_imported`` (a no-op) or ``dry_run``."""

    status: str
    message: str
    counts: dict[str, Any] = field(default_factory=dict)
    record: MachineScoreImport | None = None
    preview: list[dict[str, Any]] = field(default_factory=list)


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


def _describe(schedule: _Schedule, pk: int) -> str:
    position, item, level, evaluand_id, repetition = schedule.entries[pk]
    code = schedule.code_of.get(evaluand_id, f"evaluand {evaluand_id}")
    return f"#{position} ({item}@{level}, {code}, repetition {repetition})"


def _problem(row: int | None, where: str, message: str, label: str = "") -> ImportProblem:
    return ImportProblem(row, where, message, label)


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
            return int(text) if text.lstrip("-").isdigit() else text
        if kind == FieldKind.NUMBER:
            number = float(text)
            return int(number) if number.is_integer() and "." not in text else number
        if kind == FieldKind.CHECKLIST:
            value = json.loads(text) if text.startswith("[") else [int(p) for p in text.split(";")]
            return value
    except ValueError:
        return text
    return text


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
        scorer_code: str | None,
    ):
        self.version = version
        self.format = format
        self.records = records
        self.columns = columns
        self.problems: list[ImportProblem] = []
        self.planned: list[_Planned] = []
        self.fields = {
            f.name: f for f in RubricField.objects.filter(version=version).order_by("position")
        }
        self.roster = {e.code: e for e in ScorerRosterEntry.objects.filter(version=version)}
        self._mapping(mapping, scorer_code)

    # -- the mapping ------------------------------------------------------------------------

    def _mapping(self, mapping: dict[str, Any], scorer_code: str | None) -> None:
        keys = set(mapping)
        unknown = keys - set(ADMINISTRATION_TARGETS) - set(OWN_TARGETS)
        for key in sorted(unknown):
            self.problems.append(
                _problem(
                    None,
                    f"mapping.{key}",
                    "is not a target; the targets are "
                    + ", ".join((*ADMINISTRATION_TARGETS, *OWN_TARGETS)),
                )
            )
        names = self.columns
        if names is None:
            names = sorted({key for record in self.records for key in record.fields})
        administration = {
            t: s
            for t, s in default_mapping(self.format, names).items()
            if t in ADMINISTRATION_TARGETS
        }
        administration.update({t: mapping[t] for t in ADMINISTRATION_TARGETS if t in mapping})
        administration = {t: s for t, s in administration.items() if s is not None}
        if "position" in mapping and mapping["position"] is not None:
            for target in ADMINISTRATION_BY_KEY:
                if target not in mapping:
                    administration.pop(target, None)
        normalised: dict[str, dict] = {}
        for target, source in administration.items():
            spec = _source_spec(source)
            if spec is None:
                self.problems.append(
                    _problem(
                        None, f"mapping.{target}", 'give a column, {"column": …} or {"const": …}'
                    )
                )
                continue
            normalised[target] = spec
        if "position" not in normalised and not {"item", "evaluand"} <= set(normalised):
            self.problems.append(
                _problem(
                    None,
                    "mapping",
                    "name each row's response: map position, or item and evaluand (and level "
                    "and repetition unless the design has one of each)",
                )
            )
        self.administration_mapping = normalised
        self.attempt_source = None
        attempt = mapping.get("attempt", "attempt" if "attempt" in names else None)
        if attempt is not None:
            spec = _source_spec(attempt)
            if spec is None:
                self.problems.append(_problem(None, "mapping.attempt", "give a column or const"))
            else:
                self.attempt_source = compile_source(spec)
        # The scorer.
        scorer = mapping.get("scorer")
        if scorer is None:
            if "scorer" in names:
                scorer = "scorer"
            elif scorer_code:
                scorer = {"const": scorer_code}
            elif len(self.roster) == 1:
                scorer = {"const": next(iter(self.roster))}
        if scorer is None:
            self.problems.append(
                _problem(
                    None,
                    "scorer",
                    "say which scorer these scores are from (a code on the scorer roster: "
                    + (", ".join(self.roster) or "the roster is empty")
                    + ")",
                )
            )
            self.scorer_source = None
        else:
            spec = _source_spec(scorer)
            self.scorer_source = compile_source(spec) if spec else None
            if spec is None:
                self.problems.append(_problem(None, "mapping.scorer", "give a column or const"))
        # The fields.
        self.field_sources: dict[str, Any] = {}
        self.inspect_binary: set[str] = set()
        machine_fields = {
            name for name, f in self.fields.items() if f.scorer_scores and not f.derivation
        }
        given = mapping.get("fields")
        scores = mapping.get("scores")
        if given is not None and not isinstance(given, dict):
            self.problems.append(_problem(None, "mapping.fields", "give {field: source}"))
            given = {}
        if scores is not None and not isinstance(scores, dict):
            self.problems.append(_problem(None, "mapping.scores", "give {score name: field}"))
            scores = {}
        specs: dict[str, dict] = {}
        for name, source in (given or {}).items():
            spec = _source_spec(source)
            if spec is None:
                self.problems.append(
                    _problem(None, f"mapping.fields.{name}", "give a column or const")
                )
                continue
            specs[name] = spec
        for score_name, target in (scores or {}).items():
            spec_values: dict | None = None
            if isinstance(target, dict):
                spec_values = target.get("values")
                target = target.get("field")
            if not isinstance(target, str) or (
                spec_values is not None and not isinstance(spec_values, dict)
            ):
                self.problems.append(
                    _problem(
                        None, f"mapping.scores.{score_name}", 'give a field or {"field", "values"}'
                    )
                )
                continue
            spec = {"column": f"scores.{score_name}.value"}
            if spec_values is not None:
                spec["values"] = spec_values
            specs[target] = spec
            if spec_values is None:
                self.inspect_binary.add(target)
        if given is None and scores is None:
            if self.format == "inspect":
                score_names = sorted(
                    {
                        name
                        for record in self.records
                        for name in (record.fields.get("scores") or {})
                    }
                )
                for name in score_names:
                    if name not in self.fields:
                        self.problems.append(
                            _problem(
                                None,
                                f"scores.{name}",
                                f"the rubric has no field {name!r}; map the score to a field "
                                'with {"scores": {"' + name + '": "<field>"}}',
                            )
                        )
                        continue
                    specs[name] = {"column": f"scores.{name}.value"}
                    self.inspect_binary.add(name)
            else:
                reserved = set(ADMINISTRATION_TARGETS) | {"attempt", "scorer"} | set(DETAIL_KEYS)
                reserved |= {s["column"] for s in normalised.values() if "column" in s}
                for name in names:
                    if name in reserved:
                        continue
                    specs[name] = {"column": name}
        for name in list(specs):
            if name not in self.fields:
                self.problems.append(_problem(None, name, f"the rubric has no field {name!r}"))
                specs.pop(name)
            elif name not in machine_fields:
                f = self.fields[name]
                why = (
                    "is derived from another field"
                    if f.derivation
                    else "is scored by reviewers only"
                )
                self.problems.append(
                    _problem(None, name, f"field {name!r} {why}: no scorer scores it")
                )
                specs.pop(name)
        if not specs and not self.problems:
            self.problems.append(
                _problem(None, "mapping.fields", "no column names a field the scorers score")
            )
        self.field_sources = {name: compile_source(spec) for name, spec in specs.items()}
        self.normalised = {
            **normalised,
            "fields": specs,
            **({"scorer": _source_spec(scorer)} if scorer is not None else {}),
        }

    # -- the rows -------------------------------------------------------------------------

    def check(self, schedule: _Schedule) -> None:
        checker = _Checker(schedule, self.administration_mapping)
        version_id = self.version.pk
        responses: dict[int, list[tuple[int, int, int, int | None]]] = defaultdict(list)
        for attempt in (
            Attempt.objects.filter(version_id=version_id, response__isnull=False)
            .order_by("administration_id", "number")
            .values_list(
                "administration_id",
                "number",
                "response__pk",
                "response__word_count",
                "administration__cell_id",
            )
        ):
            administration_id, number, response_id, words, cell_id = attempt
            responses[administration_id].append((number, response_id, words, cell_id))
        needs_units = any(
            self.fields[name].kind == FieldKind.CHECKLIST for name in self.field_sources
        )
        units: dict[int, list[tuple[int, bool]]] = defaultdict(list)
        if needs_units:
            for cell_id, position, executable in (
                KeyUnit.objects.filter(version_id=version_id)
                .order_by("cell_id", "position")
                .values_list("cell_id", "position", "executable")
            ):
                units[cell_id].append((position, executable))
        roster_ids = {code: entry.scorer_id for code, entry in self.roster.items()}
        existing = set(
            MachineScore.objects.filter(version_id=version_id).values_list(
                "scorer_id", "response_id", "field"
            )
        )
        seen: dict[tuple[int, int, str], int] = {}
        # For each scorer role, the fields it may score and the derived fields that follow.
        derived_of: dict[str, list[RubricField]] = defaultdict(list)
        for f in self.fields.values():
            if f.derivation:
                derived_of[f.derived_from].append(f)
        for record in self.records:
            before = len(checker.problems)
            administration_id = checker.administration(record)
            for problem in checker.problems[before:]:
                self.problems.append(problem)
            del checker.problems[before:]
            label = record.label
            entry = None
            if self.scorer_source is not None:
                code, issue = self.scorer_source(record.fields)
                code = "" if code is None else str(code).strip()
                entry = self.roster.get(code)
                if issue:
                    self.problems.append(_problem(record.row, "scorer", issue, label))
                elif entry is None:
                    known = ", ".join(self.roster) or "none"
                    self.problems.append(
                        _problem(
                            record.row,
                            "scorer",
                            f"{code!r} is not on this version's scorer roster ({known})",
                            label,
                        )
                    )
            response = None
            if administration_id is not None:
                answered = responses.get(administration_id, [])
                wanted = None
                if self.attempt_source is not None:
                    raw, _ = self.attempt_source(record.fields)
                    if raw not in (None, ""):
                        try:
                            wanted = int(str(raw).strip())
                        except ValueError:
                            self.problems.append(
                                _problem(
                                    record.row,
                                    "attempt",
                                    f"{raw!r} is not an attempt number",
                                    label,
                                )
                            )
                            continue
                if wanted is None:
                    response = answered[-1] if answered else None
                else:
                    response = next((a for a in answered if a[0] == wanted), None)
                if response is None:
                    which = f"attempt {wanted} of " if wanted is not None else ""
                    self.problems.append(
                        _problem(
                            record.row,
                            "response",
                            f"{which}administration {_describe(schedule, administration_id)} has "
                            "no response to score",
                            label,
                        )
                    )
            raw_values: dict[str, Any] = {}
            for name, source in self.field_sources.items():
                value, issue = source(record.fields)
                if issue:
                    self.problems.append(_problem(record.row, name, issue, label))
                    continue
                f = self.fields[name]
                if isinstance(value, str) and (self.format == "csv" or f.kind != FieldKind.QUOTE):
                    if (
                        self.format == "inspect"
                        and name in self.inspect_binary
                        and (f.kind == FieldKind.BINARY and value in INSPECT_BINARY)
                    ):
                        value = INSPECT_BINARY[value]
                    elif self.format == "csv":
                        value = _text_value(f, value)
                if isinstance(value, str) and "\x00" in value:
                    self.problems.append(
                        _problem(record.row, name, "contains a NUL character", label)
                    )
                    continue
                raw_values[name] = value
            if entry is not None:
                for name in raw_values:
                    f = self.fields[name]
                    if f.scorer_role != entry.role:
                        self.problems.append(
                            _problem(
                                record.row,
                                name,
                                f"the scorer {entry.code!r} has the role {entry.role!r}; the "
                                f"rubric gives {name!r} to the role {f.scorer_role!r}",
                                label,
                            )
                        )
            if response is None or entry is None:
                continue
            _, response_id, words, cell_id = response
            subset = [self.fields[name] for name in raw_values]
            subset += [d for name in raw_values for d in derived_of.get(name, [])]
            try:
                cleaned = score_values_clean(
                    fields=subset,
                    values=raw_values,
                    word_count=words,
                    units=units.get(cell_id, []) if needs_units else [],
                )
            except ValidationError as error:
                for name, messages in error.message_dict.items():
                    for message in messages:
                        self.problems.append(_problem(record.row, name, message, label))
                continue
            detail = self._detail(record, raw_values)
            where = _describe(schedule, administration_id)
            scorer_id = roster_ids[entry.code]
            for name, value in cleaned.items():
                if value is None:
                    continue
                key = (scorer_id, response_id, name)
                if key in existing:
                    self.problems.append(
                        _problem(
                            record.row,
                            name,
                            f"the scorer {entry.code!r} already scored {name!r} of "
                            f"{where} in an earlier import",
                            label,
                        )
                    )
                    continue
                if key in seen:
                    self.problems.append(
                        _problem(
                            record.row,
                            name,
                            f"duplicate: row {seen[key]} of this file already gives the scorer "
                            f"{entry.code!r}'s {name!r} of {where}",
                            label,
                        )
                    )
                    continue
                seen[key] = record.row
                self.planned.append(
                    _Planned(
                        row=record.row,
                        response_id=response_id,
                        scorer_id=scorer_id,
                        scorer_code=entry.code,
                        field=name,
                        value=value,
                        detail=detail,
                        administration=where,
                    )
                )

    def _detail(self, record: SourceRecord, values: dict[str, Any]) -> dict[str, Any]:
        if self.format == "inspect":
            scores = record.fields.get("scores") or {}
            return {
                name: {k: score.get(k) for k in ("answer", "explanation") if score.get(k)}
                for name, score in scores.items()
                if isinstance(score, dict)
            }
        return {k: record.fields[k] for k in DETAIL_KEYS if record.fields.get(k) not in (None, "")}


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
            "source_id, oracle_run_id, source_row, created_at) FROM STDIN"
        ) as copy,
    ):
        for start in range(0, len(planned), 5000):
            out = []
            for p in planned[start : start + 5000]:
                if last_detail[0] != id(p.detail):
                    last_detail = (id(p.detail), _JSON.encode(p.detail).replace("\\", "\\\\"))
                value = _JSON.encode(p.value).replace("\\", "\\\\")
                out.append(
                    f"{version_id}\t{p.response_id}\t{p.scorer_id}\t{p.field}\t{value}\t"
                    f"{last_detail[1]}{tail}{p.row}\t{now}\n"
                )
            copy.write("".join(out))


def _version_problem(version: ProtocolVersion) -> str | None:
    if version.state != VersionState.FROZEN:
        return f"Machine scores attach only to a frozen version's responses: {version} is a draft."
    if hasattr(version, "withdrawal"):
        return f"{version} has been withdrawn; it takes no more scores."
    return None


def import_machine_scores(
    *,
    version: ProtocolVersion,
    user,
    data: bytes,
    filename: str,
    format: str | None,
    mapping: dict | None,
    scorer_code: str | None,
    note: str,
    dry_run: bool,
) -> MachineImportOutcome:
    """See ``services.machine.machine_scores_import``; runs inside its transaction."""
    refusal = _version_problem(version)
    if refusal:
        raise ValidationError(refusal)
    digest = sha256_hex(data)

    def already() -> MachineImportOutcome | None:
        earlier = (
            MachineScoreImport.objects.filter(version=version, sha256=digest)
            .select_related("imported_by")
            .first()
        )
        if earlier is None:
            return None
        return MachineImportOutcome(
            status="already_imported",
            message=(
                f"Nothing to do: this file (sha256 {digest[:16]}…) was already imported on "
                f"{earlier.imported_at:%Y-%m-%d %H:%M} UTC by {earlier.imported_by}: "
                f"{earlier.counts.get('scores', 0)} machine scores. Nothing was written."
            ),
            counts=earlier.counts,
            record=earlier,
        )

    if outcome := already():
        return outcome
    format = format or guess_format(filename)
    if format is None:
        raise ImportRejected(
            [_problem(None, "format", f"say which format {filename!r} is: csv, jsonl or inspect")]
        )
    try:
        source = read_file(data, format)
    except FileUnreadable as error:
        raise ImportRejected(error.problems) from error
    if not source.records:
        raise ImportRejected([_problem(None, "", "the file holds no records")])
    if mapping is not None and not isinstance(mapping, dict):
        raise ImportRejected([_problem(None, "mapping", "must be a JSON object")])
    reader = _Reader(
        version=version,
        format=format,
        records=source.records,
        columns=source.columns,
        mapping=mapping or {},
        scorer_code=scorer_code,
    )
    if reader.problems:
        raise ImportRejected(reader.problems)
    ProtocolVersion.objects.select_for_update().filter(pk=version.pk).first()
    if outcome := already():
        return outcome
    reader.check(_Schedule(version))
    if reader.problems:
        raise ImportRejected(reader.problems)
    planned = reader.planned
    counts = _counts(planned, len(source.records))
    if dry_run:
        return MachineImportOutcome(
            status="dry_run",
            message=f"Ready to import {filename}: {_summary(counts)}. Nothing was written.",
            counts=counts,
            preview=_preview(planned),
        )
    record = MachineScoreImport(
        version=version,
        sha256=digest,
        filename=filename[:255],
        format=format,
        mapping=reader.normalised,
        header=source.header,
        note=note.strip(),
        counts=counts,
        imported_by=user,
    )
    record.full_clean()
    record.save()
    _write(record, planned)
    _log(version, user, record, reader)
    return MachineImportOutcome(
        status="imported",
        message=f"Imported {filename}: {_summary(counts)}.",
        counts=counts,
        record=record,
        preview=_preview(planned),
    )


def _log(version: ProtocolVersion, user, record: MachineScoreImport, reader: _Reader) -> None:
    used = [reader.roster[code] for code in record.counts["by_scorer"]]
    scorers = "; ".join(
        f"{e.code} = {e.scorer.label} ({e.scorer.get_kind_display()} {e.scorer.name} "
        f"{e.scorer.version}, identity {e.scorer.identity_sha256})"
        for e in used
    )
    note = f" Note: {record.note}" if record.note else ""
    deviation_append(
        protocol=version.protocol,
        kind=EntryKind.IMPORT,
        rationale=(
            f"Imported machine scores from {record.filename} ({record.format}, sha256 "
            f"{record.sha256}): {_summary(record.counts)}. Scorers: {scorers}.{note}"
        ),
        actor=user,
        refs=[
            {"type": "version", "id": version.pk, "label": str(version)},
            {"type": "machine_score_import", "id": record.pk, "label": record.filename},
        ],
    )
