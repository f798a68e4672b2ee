"""Writes of evaluands, rosters, imported attempts and exclusions.

Every public service here is keyword-only and atomic; those that change a protocol's record
write their deviation-log entry in the same transaction. They check the state of what they
change; who may change it is checked before they are called (``apps.responses.access``: the
roster and imports by the protocol's PI or an editor, exclusions and control validations by its
PI), and ``user`` is recorded as the one who acted. The import of a file of attempts,
``responses_import``, is defined beside the reader and writer it runs (``importing``) and given
here with the others.
"""

from __future__ import annotations

import re
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from apps.accounts.models import User
from apps.core.rows import full_clean_save, identified_get_or_create
from apps.deviations.models import EntryKind
from apps.deviations.selectors import protocol_outcomes_visible
from apps.deviations.services import version_log_append
from apps.protocols.models import ProtocolVersion
from apps.protocols.services import version_require_editable
from apps.responses.importing import responses_import as responses_import
from apps.responses.models import (
    IDENTITY_FIELDS,
    Attempt,
    ControlValidation,
    Evaluand,
    Exclusion,
    RosterEntry,
    SessionColumns,
    identity_sha256_of,
)
from apps.responses.refs import attempt_ref
from apps.responses.selectors import cell_label, evaluand_identity_missing, exclusion_reasons

_IDENTITY_KINDS: dict[str, type] = {
    "safeguards": dict,
    "inference_settings": dict,
    "toolkit": list,
    "budgets": dict,
}
_KIND_NAMES: dict[type, str] = {dict: "a JSON object", list: "a JSON list", str: "text"}
_CODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def _identity_values(identity: dict[str, Any]) -> dict[str, Any]:
    unknown = set(identity) - set(IDENTITY_FIELDS)
    if unknown:
        raise ValidationError(f"Not part of an evaluand's identity: {', '.join(sorted(unknown))}.")
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for name in IDENTITY_FIELDS:
        kind = _IDENTITY_KINDS.get(name, str)
        value = identity.get(name)
        if value is None:
            value = kind()
        if not isinstance(value, kind):
            expected = _KIND_NAMES[kind]
            errors[name] = f"must be {expected}."
        values[name] = value
    if not str(values["model"]).strip():
        errors["model"] = "Name the model (identifier and snapshot)."
    if errors:
        raise ValidationError(errors)
    return values


@transaction.atomic
def evaluand_register(*, user: User | None, label: str, **identity: Any) -> tuple[Evaluand, bool]:
    """The evaluand with this identity tuple, created if new: ``(evaluand, created)``.

    ``identity`` holds the elements of ``IDENTITY_FIELDS`` (missing ones are empty). Identity is
    the SHA-256 of their canonical JSON, so registering the same tuple twice returns the first
    evaluand (with its label) rather than a second one.
    """
    values = _identity_values(identity)
    digest = identity_sha256_of(values)
    return identified_get_or_create(
        Evaluand(label=label.strip(), created_by=user, identity_sha256=digest, **values)
    )


@transaction.atomic
def evaluand_revise(
    *, evaluand: Evaluand, user: User | None, label: str | None = None, **changes: Any
) -> Evaluand:
    """A NEW evaluand: ``evaluand``'s identity with ``changes`` applied, derived from it.

    The old evaluand is untouched (evaluands are append-only). Raises ValidationError when the
    changes leave the identity as it was, or produce the identity of another evaluand.
    """
    values = _identity_values({**evaluand.identity(), **changes})
    digest = identity_sha256_of(values)
    if digest == evaluand.identity_sha256:
        raise ValidationError("Nothing in the identity changed, so this is the same evaluand.")
    existing = Evaluand.objects.filter(identity_sha256=digest).first()
    if existing is not None:
        raise ValidationError(f"That identity is already the evaluand {existing}.")
    revised = Evaluand(
        label=(label if label is not None else evaluand.label).strip(),
        created_by=user,
        identity_sha256=digest,
        derived_from=evaluand,
        **values,
    )
    return full_clean_save(revised)


@transaction.atomic
def roster_enroll(
    *, version: ProtocolVersion, evaluand: Evaluand, code: str, user: User
) -> RosterEntry:
    """Enrol ``evaluand`` in the draft ``version``'s roster under ``code``."""
    version_require_editable(version)
    code = code.strip()
    if not _CODE.match(code):
        raise ValidationError(
            {"code": "Use letters, digits, '.', '_' and '-', starting with a letter or digit."}
        )
    roster = RosterEntry.objects.filter(version=version)
    if roster.filter(code=code).exists():
        raise ValidationError({"code": f"The code {code!r} is already on this roster."})
    if roster.filter(evaluand=evaluand).exists():
        raise ValidationError({"evaluand": f"{evaluand} is already on this roster."})
    missing = evaluand_identity_missing(version=version, evaluand=evaluand)
    if missing:
        raise ValidationError(
            {
                "evaluand": f"{evaluand.label} is not an eligible identity: this plan requires "
                f"the full identity tuple (CRUCIBLE §2) and {', '.join(missing)} "
                f"{'is' if len(missing) == 1 else 'are'} missing. Register the evaluand with "
                "every element; a marketed model name alone is not an evaluand."
            }
        )
    last = roster.order_by("-position").values_list("position", flat=True).first()
    entry = RosterEntry(
        version=version, evaluand=evaluand, code=code, position=0 if last is None else last + 1
    )
    return full_clean_save(entry)


@transaction.atomic
def roster_remove(*, entry: RosterEntry, user: User) -> None:
    """Take an evaluand off a draft version's roster."""
    version_require_editable(entry.version)
    entry.delete()


@transaction.atomic
def exclusion_record(
    *, attempt: Attempt, reason_code: str, rationale: str, user: User
) -> Exclusion:
    """Exclude ``attempt`` from analysis, for a frozen or evidence-integrity reason.

    Whether outcome data were visible when the decision was made comes from the outcome seal —
    true once any version of the protocol has been unsealed — never from the caller. Writes an
    ``exclusion`` log entry. The attempt and its response stay visible and counted.
    """
    version = attempt.version
    reasons = exclusion_reasons(version)
    errors = {}
    if reason_code not in reasons:
        errors["reason_code"] = (
            f"{reason_code!r} is not a frozen exclusion reason; the reasons are "
            f"{', '.join(reasons)}."
        )
    if not rationale.strip():
        errors["rationale"] = "Say why this attempt is excluded."
    if errors:
        raise ValidationError(errors)
    previous = Exclusion.objects.filter(attempt=attempt).select_related("decided_by").first()
    if previous is not None:
        raise ValidationError(
            f"This attempt was already excluded ({previous.reason_code}) on "
            f"{previous.decided_at:%Y-%m-%d %H:%M} UTC by {previous.decided_by}."
        )
    outcome_visible = protocol_outcomes_visible(protocol_id=version.protocol_id)
    exclusion = Exclusion(
        version=version,
        attempt=attempt,
        reason_code=reason_code,
        rationale=rationale.strip(),
        decided_by=user,
        outcome_visible=outcome_visible,
    )
    full_clean_save(exclusion)
    administration = attempt.administration
    version_log_append(
        version,
        kind=EntryKind.EXCLUSION,
        rationale=(
            f"Excluded attempt {attempt.number} of administration #{administration.position} "
            f"({cell_label(administration)}) for {reason_code}: {exclusion.rationale}"
        ),
        actor=user,
        refs=[
            attempt_ref(attempt),
            {"type": "exclusion", "id": exclusion.pk, "label": reason_code},
        ],
    )
    return exclusion


@transaction.atomic
def control_validation_record(
    *, version: ProtocolVersion, environment: str, result: str, rationale: str, user: User
) -> ControlValidation:
    """Record the control validation of ``environment`` for the frozen ``version`` (CRUCIBLE
    §7): ``result`` pass, fail or inconclusive — inconclusive is never a pass. Writes a
    ``control_validation`` log entry. A later record for the same environment supersedes an
    earlier one in the analysis; neither is ever changed. Raises ValidationError naming the
    field for an unknown result, an empty environment or rationale, or a draft version."""
    if version.state == "draft":
        raise ValidationError({"version": "Control validations are recorded on a frozen version."})
    record = ControlValidation(
        version=version,
        environment=environment.strip(),
        result=result,
        rationale=rationale.strip(),
        recorded_by=user,
    )
    full_clean_save(record)
    version_log_append(
        version,
        kind=EntryKind.CONTROL_VALIDATION,
        rationale=f"Control validation of execution environment {record.environment}: "
        f"{record.result}. {record.rationale}",
        actor=user,
    )
    return record


@transaction.atomic
def session_columns_backfill(*, version: ProtocolVersion) -> tuple[int, list[str]]:
    """Store the typed session columns (``SessionColumns``) of ``version``'s attempts that have
    none (imported before the columns were stored), extracted from each attempt's verbatim
    ``raw`` by the one extractor (``sessions.session_record``). Only for a version whose plan
    reads sessions (an import check that asks for ``session_columns``); idempotent.

    Returns (rows written, problems): an attempt whose record cannot be read as a session is
    named with its field and left without columns (the analysis then refuses to run, naming it).
    No deviation-log entry: nothing the study holds changes, the columns are read off records
    already kept.
    """
    from apps.responses.importing import _record_checks_for
    from apps.responses.sessions import RecordError, session_record

    checks = _record_checks_for(version)
    if not any(getattr(check, "session_columns", False) for check in checks):
        return 0, []
    missing = (
        Attempt.objects.filter(version=version, session_columns__isnull=True)
        .order_by("pk")
        .values_list("pk", "administration__position", "terminal_outcome", "raw")
    )
    rows, problems, written = [], [], 0
    for pk, position, outcome, raw in missing.iterator(chunk_size=2000):
        try:
            record = session_record(raw, outcome)
        except RecordError as error:
            problems.append(
                f"attempt {pk} (administration #{position}), field {error.field}: {error}"
            )
            continue
        rows.append(SessionColumns(attempt_id=pk, **record.stored()))
        if len(rows) >= 2000:
            written += len(SessionColumns.objects.bulk_create(rows))
            rows = []
    written += len(SessionColumns.objects.bulk_create(rows))
    return written, problems
