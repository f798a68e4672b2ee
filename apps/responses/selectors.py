"""Reads of evaluands, rosters, schedules, attempts, imports, exclusions and control
validations."""

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Q, QuerySet

from apps.accounts.models import User
from apps.accounts.selectors import SIGHTED_ROLES
from apps.items.models import Cell
from apps.protocols.models import AnalysisParameter, ProtocolVersion
from apps.responses.models import (
    EVIDENCE_INTEGRITY_REASONS,
    IDENTITY_FIELDS,
    Administration,
    Attempt,
    ControlResult,
    ControlValidation,
    Evaluand,
    Exclusion,
    Response,
    ResponseImport,
    RosterEntry,
    TerminalOutcome,
)

# The outcomes that describe the model's behaviour; platform losses are counted apart.
MODEL_OUTCOMES = [o.value for o in TerminalOutcome if o != TerminalOutcome.PLATFORM_LOSS]
# The plan parameter (the crucible pipeline declares it) under which the roster refuses any
# evaluand missing an element of its identity tuple (CRUCIBLE §2).
REQUIRE_FULL_IDENTITY = "require_full_identity"


def roster_of(version: ProtocolVersion) -> QuerySet[RosterEntry]:
    """The version's roster in order, with each evaluand."""
    return RosterEntry.objects.filter(version=version).select_related(
        "evaluand", "evaluand__session_guarantee"
    )


def evaluand_identity_missing(*, version: ProtocolVersion, evaluand: Evaluand) -> list[str]:
    """The identity elements ``evaluand`` lacks, when ``version``'s plan requires the full tuple
    (its ``require_full_identity`` parameter is true); otherwise, and when none lack, []."""
    value = (
        version.parameters.filter(name=REQUIRE_FULL_IDENTITY)
        .values_list("value", flat=True)
        .first()
    )
    if (value or "").strip().lower() not in ("true", "1", "yes"):
        return []
    return [name for name in IDENTITY_FIELDS if getattr(evaluand, name) in ("", None, {}, [])]


def roster_code(administration: Administration) -> str:
    """The roster code under which the administration's evaluand is enrolled."""
    return RosterEntry.objects.filter(
        version_id=administration.version_id, evaluand_id=administration.evaluand_id
    ).values_list("code", flat=True).first() or str(administration.evaluand_id)


def cell_label(administration: Administration) -> str:
    """``xs-1@L0, gpt4, repetition 1``: what an administration gives to whom."""
    cell = administration.cell
    return (
        f"{cell.item.code}@{cell.level.code}, {roster_code(administration)}, "
        f"repetition {administration.repetition}"
    )


def evaluands_visible_to(*, user: User) -> QuerySet[Evaluand]:
    """Evaluands ``user`` registered, or enrolled in a protocol where they hold a sighted role.

    A blind reviewer's role never makes an evaluand visible.
    """
    sighted = Q(
        rosters__version__protocol__memberships__user=user,
        rosters__version__protocol__memberships__role__in=SIGHTED_ROLES,
    )
    return (
        Evaluand.objects.filter(Q(created_by=user) | sighted)
        .select_related("derived_from", "session_guarantee")
        .distinct()
        .order_by("label", "created_at")
    )


def exclusion_reasons(version: ProtocolVersion) -> dict[str, str]:
    """The reason codes an exclusion in ``version`` may give: code → description.

    The evidence-integrity reasons every plan has, then the plan's own frozen reasons from its
    ``exclusion_reasons`` parameter: a json parameter ``[{"code", "label"}, …]`` (issue #12),
    or, in plans written before parameters were typed, text with one ``code: description`` per
    line (or separated by ``;``).
    """
    reasons = dict(EVIDENCE_INTEGRITY_REASONS)
    parameter = AnalysisParameter.objects.filter(version=version, name="exclusion_reasons").first()
    if parameter is not None and parameter.kind == "json":
        try:
            entries = json.loads(parameter.value) if parameter.value.strip() else []
        except ValueError:
            entries = []  # the freeze gate refuses an invalid value; nothing to offer here
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and isinstance(entry.get("code"), str):
                reasons[entry["code"]] = str(entry.get("label") or entry["code"])
    elif parameter is not None:
        for line in parameter.value.replace(";", "\n").splitlines():
            code, _, description = line.partition(":")
            if code.strip():
                reasons[code.strip()] = description.strip() or code.strip()
    return reasons


def imports_of(version: ProtocolVersion) -> QuerySet[ResponseImport]:
    """The version's imports, newest first, with who imported each."""
    return (
        ResponseImport.objects.filter(version=version)
        .select_related("imported_by")
        .order_by("-imported_at", "-pk")
    )


def attempts_of(version: ProtocolVersion) -> QuerySet[Attempt]:
    """The version's attempts in schedule order, with what pages show of each."""
    return (
        Attempt.objects.filter(version=version)
        .select_related(
            "administration__cell__item",
            "administration__cell__level",
            "administration__evaluand",
            "response",
            "source",
        )
        .prefetch_related("exclusions__decided_by")
        .order_by("administration__position", "number")
    )


def attempt_detail(*, version: ProtocolVersion, position: int, number: int) -> Attempt | None:
    """Attempt ``number`` of the administration at ``position``, with its administration,
    response, source file and exclusion."""
    return (
        Attempt.objects.select_related(
            "version__protocol",
            "administration__cell__item",
            "administration__cell__level",
            "administration__evaluand",
            "response",
            "source__imported_by",
            "session_columns",
        )
        .prefetch_related("exclusions__decided_by")
        .filter(version=version, administration__position=position, number=number)
        .first()
    )


def exclusions_of(version: ProtocolVersion) -> QuerySet[Exclusion]:
    """The version's exclusions, newest first."""
    return (
        Exclusion.objects.filter(version=version)
        .select_related(
            "decided_by",
            "attempt__administration__cell__item",
            "attempt__administration__cell__level",
        )
        .order_by("-decided_at", "-pk")
    )


def version_responses(version: ProtocolVersion) -> QuerySet[Response]:
    """Every response of the version, in schedule order then attempt number.

    Excluded responses are included (exclusions are reported, never hidden); callers that score
    or analyse decide what to do with ``attempt.exclusions``.
    """
    return (
        Response.objects.filter(version=version)
        .select_related("attempt__administration__cell")
        .order_by("attempt__administration__position", "attempt__number")
    )


def outcome_counts(version: ProtocolVersion) -> dict[str, Any]:
    """Attempts by terminal outcome, with platform losses apart from the model's outcomes."""
    counts = Counter(
        dict(
            Attempt.objects.filter(version=version)
            .values("terminal_outcome")
            .annotate(n=Count("pk"))
            .values_list("terminal_outcome", "n")
        )
    )
    return {
        "model_outcomes": {outcome: counts.get(outcome, 0) for outcome in MODEL_OUTCOMES},
        "platform_losses": counts.get(TerminalOutcome.PLATFORM_LOSS, 0),
        "attempts": sum(counts.values()),
        "excluded": Exclusion.objects.filter(version=version).count(),
    }


@dataclass
class EvaluandCounts:
    code: str
    label: str
    administrations: int = 0
    observed: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    platform_losses: int = 0
    reruns: int = 0
    excluded: int = 0

    @property
    def outcome_list(self) -> list[int]:
        return [self.outcomes.get(outcome, 0) for outcome in MODEL_OUTCOMES]


@dataclass
class ResponsesSummary:
    rows: list[EvaluandCounts]
    total: EvaluandCounts
    outcomes: list[str]
    absent_cells: list[dict[str, str]]
    unobserved_count: int
    unobserved: list[str]
    imports: int


def responses_summary(version: ProtocolVersion, *, unobserved_listed: int = 50) -> ResponsesSummary:
    """Counts by evaluand × outcome, platform losses apart, reruns, exclusions; absent cells;
    administrations not yet observed (no attempt with a model outcome)."""
    rows = {
        entry.evaluand_id: EvaluandCounts(code=entry.code, label=entry.evaluand.label)
        for entry in roster_of(version)
    }
    administrations = Administration.objects.filter(version=version)
    for evaluand_id, n in administrations.values_list("evaluand_id").annotate(n=Count("pk")):
        rows[evaluand_id].administrations = n
    model_attempt = Q(attempts__terminal_outcome__in=MODEL_OUTCOMES)
    for evaluand_id, n in (
        administrations.filter(model_attempt)
        .values_list("evaluand_id")
        .annotate(n=Count("pk", distinct=True))
    ):
        rows[evaluand_id].observed = n
    attempts = Attempt.objects.filter(version=version)
    for evaluand_id, outcome, n in attempts.values_list(
        "administration__evaluand_id", "terminal_outcome"
    ).annotate(n=Count("pk")):
        if outcome == TerminalOutcome.PLATFORM_LOSS:
            rows[evaluand_id].platform_losses = n
        else:
            rows[evaluand_id].outcomes[outcome] = n
    for evaluand_id, n in (
        attempts.filter(number__gt=1)
        .values_list("administration__evaluand_id")
        .annotate(n=Count("pk"))
    ):
        rows[evaluand_id].reruns = n
    for evaluand_id, n in (
        Exclusion.objects.filter(version=version)
        .values_list("attempt__administration__evaluand_id")
        .annotate(n=Count("pk"))
    ):
        rows[evaluand_id].excluded = n
    total = EvaluandCounts(code="all", label="All evaluands")
    for row in rows.values():
        total.administrations += row.administrations
        total.observed += row.observed
        total.platform_losses += row.platform_losses
        total.reruns += row.reruns
        total.excluded += row.excluded
        for outcome, n in row.outcomes.items():
            total.outcomes[outcome] = total.outcomes.get(outcome, 0) + n
    unobserved = (
        administrations.exclude(pk__in=administrations.filter(model_attempt).values("pk"))
        .select_related("cell__item", "cell__level")
        .order_by("position")
    )
    codes = {evaluand_id: row.code for evaluand_id, row in rows.items()}
    listed = [
        f"#{a.position} {a.cell.item.code}@{a.cell.level.code}, {codes[a.evaluand_id]}, "
        f"repetition {a.repetition}"
        for a in unobserved[:unobserved_listed]
    ]
    absent = (
        Cell.objects.filter(version=version, absent=True)
        .select_related("item", "level")
        .order_by("item__code", "level__ordinal")
    )
    return ResponsesSummary(
        rows=list(rows.values()),
        total=total,
        outcomes=MODEL_OUTCOMES,
        absent_cells=[
            {"cell": f"{c.item.code}@{c.level.code}", "reason": c.absent_reason} for c in absent
        ],
        unobserved_count=unobserved.count(),
        unobserved=listed,
        imports=ResponseImport.objects.filter(version=version).count(),
    )


@dataclass(frozen=True)
class ControlValidationRow:
    """One control validation as its pages and API show it."""

    id: int
    environment: str
    result: str
    result_label: str
    rationale: str
    recorded_by: str
    recorded_at: Any
    # The record the analysis reads for its environment (the newest), and whether it counts as
    # a pass: only a latest pass does; an inconclusive control never does (CRUCIBLE §7).
    is_latest: bool
    counts_as_pass: bool


def control_validations_of(version: ProtocolVersion) -> list[ControlValidationRow]:
    """The version's control validations (CRUCIBLE §7), newest first."""
    rows = []
    seen: set[str] = set()
    for record in (
        ControlValidation.objects.filter(version=version)
        .select_related("recorded_by")
        .order_by("-recorded_at", "-pk")
    ):
        latest = record.environment not in seen
        seen.add(record.environment)
        rows.append(
            ControlValidationRow(
                id=record.pk,
                environment=record.environment,
                result=record.result,
                result_label=record.get_result_display(),
                rationale=record.rationale,
                recorded_by=record.recorded_by.get_username(),
                recorded_at=record.recorded_at,
                is_latest=latest,
                counts_as_pass=latest and record.result == ControlResult.PASS,
            )
        )
    return rows
