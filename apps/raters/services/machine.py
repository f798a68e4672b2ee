"""Writes of machine scores: imports, oracle runs, and the human audit sample.

Machine scores never enter the reviewers' queue and are never read by anything a reviewer
reaches (``apps.raters.selectors.task_content`` reads no machine score). docs/machine-scores.md
describes the whole flow. Who may import or run an oracle (the protocol's PI or an editor) is
checked before these are called (``apps.raters.access``); they check the version and the file.
The import of a file of machine scores, ``machine_scores_import``, is defined beside the reader
and writer it runs (``apps.raters.machine_import``) and given here with the others.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from apps.accounts.models import User
from apps.core.rows import full_clean_save
from apps.deviations.models import EntryKind
from apps.deviations.services import version_log_append
from apps.protocols.models import ProtocolVersion, VersionState
from apps.raters.machine_import import machine_scores_import as machine_scores_import
from apps.raters.models import (
    MachineScore,
    OracleRun,
    OracleRunState,
    RubricField,
    ScorerKind,
    ScorerRosterEntry,
)
from apps.raters.oracle import oracle_compare, oracle_value
from apps.raters.refs import oracle_run_ref
from apps.responses.models import Exclusion, Response

_ORACLE_CHUNK = 2000


# -- Oracle runs ---------------------------------------------------------------------------


@transaction.atomic
def oracle_run_request(*, version: ProtocolVersion, scorer_code: str, user: User) -> OracleRun:
    """Queue an oracle run of the roster's oracle ``scorer_code`` over ``version``'s responses.

    Raises ValidationError when the version is not frozen, the code is not an oracle on its
    scorer roster, or no rubric field is given to the oracle's role.
    """
    if version.state != VersionState.FROZEN:
        raise ValidationError("An oracle scores a frozen version's responses: freeze it first.")
    entry = (
        ScorerRosterEntry.objects.filter(version=version, code=scorer_code)
        .select_related("scorer")
        .first()
    )
    if entry is None or entry.scorer.kind != ScorerKind.ORACLE:
        raise ValidationError({"scorer": f"{scorer_code!r} is not an oracle on the scorer roster."})
    if not _oracle_fields(version, entry.role):
        raise ValidationError(
            {"scorer": f"No rubric field is scored by the role {entry.role!r} of {scorer_code!r}."}
        )
    run = OracleRun(version=version, scorer=entry.scorer, requested_by=user)
    full_clean_save(run)
    transaction.on_commit(lambda: _enqueue(run.pk))
    return run


def _enqueue(run_id: int) -> None:
    from apps.raters.tasks import oracle_run_task

    oracle_run_task.delay(run_id)


def _oracle_fields(version: ProtocolVersion, role: str) -> list[RubricField]:
    return list(
        RubricField.objects.filter(version=version, scorer_role=role, derivation="")
        .exclude(scored_by="reviewers")
        .order_by("position")
    )


def _progress(run_id: int, percent: int, message: str) -> None:
    # Its own short transaction, so the page sees it while the run goes on.
    OracleRun.objects.filter(pk=run_id).update(progress=percent, message=message)


def oracle_run_perform(*, run_id: int) -> str:
    """Claim and perform one oracle run (the body of the Celery task).

    Compares each scored response's text with its cell's expected output by the oracle's frozen
    comparison and writes, for each of the role's fields, binary (all items correct), count
    (items correct) or number (share correct) machine scores, with ``{"correct", "n"}`` as the
    detail. Responses already scored by this oracle, excluded responses and cells without an
    expected output are skipped and counted. All scores are written in one transaction at the
    end with one log entry: a failed run writes nothing and can be run again.
    """
    claimed = OracleRun.objects.filter(pk=run_id, state=OracleRunState.QUEUED).update(
        state=OracleRunState.RUNNING, started_at=timezone.now()
    )
    if claimed != 1:
        return "not claimed"
    run = OracleRun.objects.select_related("version__protocol", "scorer", "requested_by").get(
        pk=run_id
    )
    try:
        outcome = _oracle_compute_and_write(run)
    except Exception as error:  # any failure ends the run as failed, with nothing written
        OracleRun.objects.filter(pk=run_id).update(
            state=OracleRunState.FAILED,
            message=f"Failed, nothing written: {error}",
            finished_at=timezone.now(),
        )
        return "failed"
    return outcome


def _oracle_compute_and_write(run: OracleRun) -> str:
    version, scorer = run.version, run.scorer
    role = (
        ScorerRosterEntry.objects.filter(version=version, scorer=scorer)
        .values_list("role", flat=True)
        .get()
    )
    fields = _oracle_fields(version, role)
    done = set(
        MachineScore.objects.filter(version_id=version.pk, scorer=scorer).values_list(
            "response_id", "field"
        )
    )
    excluded = set(
        Exclusion.objects.filter(version=version).values_list("attempt__response", flat=True)
    )
    responses = Response.objects.filter(version_id=version.pk).order_by("pk")
    total = responses.count()
    planned: list[MachineScore] = []
    counts = {"responses": total, "scored": 0, "no_expected_output": 0, "excluded": 0}
    counts["already_scored"] = 0
    correct_total = 0
    seen = 0
    rows = responses.values_list(
        "pk",
        "text",
        "attempt__administration__cell__expected_kind",
        "attempt__administration__cell__expected_output",
    )
    for response_id, text, kind, expected in rows.iterator(chunk_size=_ORACLE_CHUNK):
        seen += 1
        if seen % _ORACLE_CHUNK == 0:
            _progress(run.pk, int(90 * seen / max(total, 1)), f"Compared {seen} of {total}")
        if response_id in excluded:
            counts["excluded"] += 1
            continue
        if not kind:
            counts["no_expected_output"] += 1
            continue
        wanted = [f for f in fields if (response_id, f.name) not in done]
        if not wanted:
            counts["already_scored"] += 1
            continue
        verdict = oracle_compare(comparison=scorer.comparison, expected=expected, output=text)
        counts["scored"] += 1
        correct_total += verdict.all_correct
        for f in wanted:
            planned.append(
                MachineScore(
                    version_id=version.pk,
                    response_id=response_id,
                    scorer=scorer,
                    field=f.name,
                    value=oracle_value(verdict, f.kind),
                    detail=verdict.as_dict(),
                    oracle_run=run,
                )
            )
    counts["all_correct"] = correct_total
    counts["scores"] = len(planned)
    _progress(run.pk, 95, "Writing the scores")
    with transaction.atomic():
        MachineScore.objects.bulk_create(planned, batch_size=5000)
        message = (
            f"Oracle {scorer.label} ({scorer.comparison}, identity {scorer.identity_sha256}) "
            f"scored {counts['scored']} of {total} responses ({counts['scores']} machine scores; "
            f"{correct_total} all correct); {counts['no_expected_output']} without an expected "
            f"output, {counts['excluded']} excluded, {counts['already_scored']} already scored."
        )
        version_log_append(
            version,
            kind=EntryKind.IMPORT,
            rationale=message,
            actor=run.requested_by,
            refs=[oracle_run_ref(run)],
        )
        OracleRun.objects.filter(pk=run.pk).update(
            state=OracleRunState.DONE,
            progress=100,
            message=message,
            counts=counts,
            finished_at=timezone.now(),
        )
    return "succeeded"
