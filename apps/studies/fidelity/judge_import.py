"""An LLM judge's seed-003 verdicts, imported as machine scores and re-derived on the way in.

A judge of the injection-fidelity rubric emits, per sample, the JSON of ``loss1.schema.json``
(``apps.studies.fidelity.verdicts``). Its file is JSON Lines: one row per dialogue, naming the
dialogue as any machine-score row does (``position``, or
``item``/``level``/``evaluand``/``repetition``;
optionally ``attempt``), optionally its ``scorer`` (a roster code), and the judge's document
under ``document`` (or the document's own keys at the top of the row).

``machine_scores_import`` hands such a file here when the version's rubric has a ``signals``
field a scorer scores (the ``fidelity`` template with a scorer role). Each row is:

1. validated against ``loss1.schema.json`` with ``jsonschema`` — a failure refuses the whole
   file, naming the row and the JSON path (``$.per_axis_evidence.A1.observed.pushback_rate``);
2. re-derived from the judge's own observed values and quotes and the dialogue's PolicyCard
   (the cell's expected output) with the plan's frozen ε (``judge_inconsistencies``) — a count
   above the pressure window refuses the file, naming row and path;
3. stored as machine scores of the rubric's derived verdict fields (fidelity, loss1,
   drift_flag, each axis's pass) holding the *re-derived* values, so a contradiction is never
   stored as a verdict. The judge's own document and every contradiction (a pass, fidelity,
   loss1 or drift_flag its own observations do not bear out, with the axis or top-level field
   named; an observed rate that no count of judged turns gives, or half rates contradicting the
   whole, with its JSON path) are kept as the ``fidelity`` score's detail, and counted on the
   import (``counts.judge_inconsistencies``; the observed-value flags listed by row and JSON
   path) and, by the ``fidelity`` pipeline, in the report.

All or nothing, idempotent by file hash, one ``import`` log entry: as every machine-score import,
in the frame every import shares (``apps.protocols.import_frame``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

from apps.accounts.models import User
from apps.items.models import Cell
from apps.protocols.import_frame import (
    ImportOutcome,
    ImportProblem,
    problems_refuse,
    version_lock,
)
from apps.protocols.models import ProtocolVersion
from apps.raters.machine_import import (
    ADMINISTRATION_TARGETS,
    _Planned,
    machine_import_begin,
    machine_import_record,
    planned_score,
)
from apps.raters.models import (
    FieldKind,
    MachineScore,
    MachineScoreImport,
    RubricField,
    ScorerRosterEntry,
)
from apps.raters.plan import rating_plan
from apps.raters.values import FIDELITY_DERIVATIONS
from apps.responses.formats import SourceRecord, file_records
from apps.responses.importing import _Checker, _Schedule
from apps.responses.mapping import default_mapping
from apps.responses.models import Attempt
from apps.studies.fidelity.verdicts import Card, FidelityInputError, judge_inconsistencies

DOCUMENT_KEYS = ("fidelity", "loss1", "per_axis_evidence", "drift_flag", "note")
FLAGGED_LISTED = 200


def judged_by_scorer(version: ProtocolVersion) -> bool:
    """Whether ``version``'s rubric has seed 003's signals field scored by a scorer (an LLM
    judge), so that its machine-score files are loss1 documents."""
    return RubricField.objects.filter(
        version=version, kind=FieldKind.SIGNALS, scored_by__in=("scorer", "both")
    ).exists()


def verdict_value(field: RubricField, document: dict[str, Any]) -> Any:
    """What a loss1 ``document`` says for the verdict ``field`` (its derivation: fidelity, loss1,
    drift_flag or an axis's pass)."""
    if field.derivation == "axis_pass":
        return document["per_axis_evidence"][field.group]["pass"]
    return document[field.derivation]


class _JudgeReader:
    def __init__(
        self, version: ProtocolVersion, records: Iterable[SourceRecord], scorer_code: str | None
    ) -> None:
        self.version = version
        self.records = records
        self.problems: list[ImportProblem] = []
        self.planned: list[_Planned] = []
        self.inconsistencies: Counter[str] = Counter()
        self.inconsistent_rows = 0
        self.flagged: list[dict[str, Any]] = []
        self.fields = [
            f
            for f in RubricField.objects.filter(version=version).order_by("position")
            if f.derivation in FIDELITY_DERIVATIONS and f.scorer_scores
        ]
        role = self.fields[0].scorer_role if self.fields else ""
        self.roster = {
            e.code: e for e in ScorerRosterEntry.objects.filter(version=version, role=role)
        }
        self.scorer_code = scorer_code
        self.epsilon = rating_plan(version).drift_epsilon
        names = sorted({key for r in records for key in r.fields})
        self.mapping = {
            target: {"column": source}
            for target, source in default_mapping("jsonl", names).items()
            if target in ADMINISTRATION_TARGETS
        }

    def check(self) -> None:
        if not self.fields:
            self.problems.append(
                ImportProblem(None, "rubric", "the rubric has no verdict fields a scorer scores")
            )
            return
        if self.epsilon is None:
            self.problems.append(
                ImportProblem(None, "drift_epsilon", "the plan gives no drift tolerance ε")
            )
            return
        if "position" not in self.mapping and not {"item", "evaluand"} <= set(self.mapping):
            self.problems.append(
                ImportProblem(
                    None, "position", "name each row's dialogue by position, or item and evaluand"
                )
            )
            return
        schedule = _Schedule(self.version)
        checker = _Checker(schedule, self.mapping)
        self._load()
        for record in self.records:
            administration_id = checker.administration_into(record, self.problems)
            entry = self._scorer(record)
            if administration_id is None or entry is None:
                continue
            self._row(record, administration_id, entry)

    def _load(self) -> None:
        self.responses: dict[int, list[tuple[int, int, int]]] = {}
        for administration_id, number, response_id, cell_id in (
            Attempt.objects.filter(version_id=self.version.pk, response__isnull=False)
            .order_by("administration_id", "number")
            .values_list("administration_id", "number", "response__pk", "administration__cell_id")
        ):
            self.responses.setdefault(administration_id, []).append((number, response_id, cell_id))
        self.cards = dict(
            Cell.objects.filter(version_id=self.version.pk).values_list("pk", "expected_output")
        )
        self.existing = set(
            MachineScore.objects.filter(version_id=self.version.pk).values_list(
                "scorer_id", "response_id", "field"
            )
        )
        self.seen: dict[tuple[int, int], int] = {}

    def _scorer(self, record: SourceRecord) -> ScorerRosterEntry | None:
        code = record.fields.get("scorer") or self.scorer_code
        if code is None and len(self.roster) == 1:
            code = next(iter(self.roster))
        entry = self.roster.get(str(code)) if code is not None else None
        if entry is None:
            known = ", ".join(self.roster) or "none"
            self.problems.append(
                ImportProblem(
                    record.row,
                    "scorer",
                    f"{code!r} is not a judge on this version's scorer roster ({known})",
                    record.label,
                )
            )
        return entry

    def _document(self, record: SourceRecord) -> Any:
        if "document" in record.fields:
            document = record.fields["document"]
            if isinstance(document, str):
                try:
                    return json.loads(document)
                except ValueError:
                    return document
            return document
        return {k: record.fields[k] for k in DOCUMENT_KEYS if k in record.fields}

    def _row(self, record: SourceRecord, administration_id: int, entry: ScorerRosterEntry) -> None:
        answered = self.responses.get(administration_id)
        if not answered:
            self.problems.append(
                ImportProblem(record.row, "response", "the dialogue has no response", record.label)
            )
            return
        _, response_id, cell_id = answered[-1]
        try:
            card = Card.from_dict(self.cards.get(cell_id))
        except FidelityInputError as error:
            for path, message in error.problems.items():
                self.problems.append(ImportProblem(record.row, path, message, record.label))
            return
        document = self._document(record)
        try:
            verdict, found = judge_inconsistencies(document, card=card, epsilon=self.epsilon)
        except FidelityInputError as error:
            for path, message in error.problems.items():
                self.problems.append(ImportProblem(record.row, path, message, record.label))
            return
        key = (entry.scorer_id, response_id)
        if key in self.seen or any(
            (entry.scorer_id, response_id, f.name) in self.existing for f in self.fields
        ):
            earlier = f"row {self.seen[key]} of this file" if key in self.seen else "an import"
            self.problems.append(
                ImportProblem(
                    record.row,
                    "document",
                    f"duplicate: {earlier} already gives {entry.code!r}'s verdict of this dialogue",
                    record.label,
                )
            )
            return
        self.seen[key] = record.row
        if found:
            self.inconsistent_rows += 1
            for item in found:
                self.inconsistencies[item.axis or item.where] += 1
                if item.message:  # an impossible observed value: flagged by row and JSON path
                    self.flagged.append(
                        {
                            "row": record.row,
                            "path": item.path,
                            "axis": item.axis,
                            "message": item.message,
                        }
                    )
        detail_full = {"document": document, "inconsistencies": [i.to_dict() for i in found]}
        for field in self.fields:
            detail = detail_full if field.derivation == "fidelity" else {}
            value = verdict_value(field, verdict.document)
            self.planned.append(
                planned_score(
                    record, entry, response_id, field.name, value, detail, str(administration_id)
                )
            )


def fidelity_judge_import(
    *,
    version: ProtocolVersion,
    user: User,
    data: bytes,
    filename: str,
    scorer_code: str | None = None,
    note: str = "",
    dry_run: bool = False,
) -> ImportOutcome[MachineScoreImport]:
    """Import a judge's loss1 documents (JSON Lines) onto the frozen ``version``: see the module
    docstring. Runs inside the caller's transaction (``machine_scores_import``).

    Raises ``ImportRejected`` naming each row and JSON path (schema failure, count above the
    window, unreadable card, unknown dialogue or scorer, duplicate) and ValidationError when the
    version takes no scores; nothing is written then.
    """
    digest, already = machine_import_begin(version, data)
    if outcome := already():
        return outcome
    source = file_records(data, "jsonl")
    # Checked again under the lock: the same file imported meanwhile is a no-op, not a second
    # import record.
    if outcome := version_lock(version, already):
        return outcome
    reader = _JudgeReader(version, source.records, scorer_code)
    reader.check()
    problems_refuse(reader.problems)
    counts = {
        "rows": len(source.records),
        "scores": len(reader.planned),
        "responses": len({p.response_id for p in reader.planned}),
        "by_scorer": dict(Counter(p.scorer_code for p in reader.planned)),
        "by_field": dict(sorted(Counter(p.field for p in reader.planned).items())),
        "judge_inconsistencies": {
            "documents": reader.inconsistent_rows,
            "flags": sum(reader.inconsistencies.values()),
            "by_axis": dict(sorted(reader.inconsistencies.items())),
            # Observed rates no count of judged turns gives, or halves contradicting the
            # whole, by row and JSON path (the first FLAGGED_LISTED; the count is of all).
            "observed_value_flags": len(reader.flagged),
            "observed_values": reader.flagged[:FLAGGED_LISTED],
        },
    }
    summary = (
        f"{counts['rows']} judge verdicts re-derived; {reader.inconsistent_rows} contradict "
        f"their own observations ({sum(reader.inconsistencies.values())} flags)"
    )
    if reader.flagged:
        first = reader.flagged[0]
        summary += (
            f"; {len(reader.flagged)} observed value(s) no count of judged turns gives or "
            f"contradicting their halves (first: row {first['row']}, {first['path']}: "
            f"{first['message']})"
        )
    if dry_run:
        return ImportOutcome(
            status="dry_run", message=f"Ready: {summary}. Nothing was written.", counts=counts
        )
    record = machine_import_record(
        version=version,
        user=user,
        planned=reader.planned,
        sha256=digest,
        filename=filename,
        format="jsonl",
        mapping={**reader.mapping, "document": "loss1.schema.json"},
        note=note,
        counts=counts,
        rationale=lambda record: (
            f"Imported an LLM judge's loss1 verdicts from {record.filename} "
            f"(sha256 {digest}): {summary}.{' Note: ' + record.note if record.note else ''}"
        ),
    )
    return ImportOutcome(
        status="imported", message=f"Imported {filename}: {summary}.", counts=counts, record=record
    )
