"""Reads of analysis runs, their result documents and the seal over them."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from django.db.models import QuerySet

from apps.accounts.models import Membership, Role, User
from apps.analysis.models import AnalysisRun, RunState
from apps.analysis.pipelines import get_pipeline
from apps.deviations.selectors import outcomes_visible
from apps.protocols.models import ProtocolVersion


def runs_of(*, version: ProtocolVersion) -> QuerySet[AnalysisRun]:
    """The version's runs, newest first, with who asked for them."""
    return (
        AnalysisRun.objects.filter(version=version)
        .select_related("requested_by", "rerun_of")
        .order_by("-number")
    )


def run_is_sealed(run: AnalysisRun) -> bool:
    """Whether the run's outcomes are still sealed (no PI has unsealed the version's)."""
    return not outcomes_visible(run.version)


def result_bytes(run: AnalysisRun) -> bytes:
    """The result document exactly as stored (the blob's bytes). The run must have succeeded."""
    result = run.result if run.state == RunState.SUCCEEDED else None
    if result is None:
        raise ValueError(f"analysis run {run.number} has no result (state {run.state})")
    return bytes(result.content)


def result_document(run: AnalysisRun) -> dict[str, Any]:
    """The result document, decoded (a JSON object)."""
    document: dict[str, Any] = json.loads(result_bytes(run))
    return document


def inputs_document(run: AnalysisRun) -> dict[str, Any]:
    """The input document the run computed on, decoded (a JSON object)."""
    inputs = run.inputs
    if inputs is None:
        raise ValueError(f"analysis run {run.number} has no stored inputs")
    document: dict[str, Any] = json.loads(bytes(inputs.content))
    return document


def result_filename(code: str, label: str, run: AnalysisRun) -> str:
    """The download name of ``run``'s result document (on the team's and the public pages)."""
    return f"{code}-v{label}-analysis-{run.number}-{run.result_sha256[:16]}.json"


def tidy_filename(code: str, label: str, run: AnalysisRun) -> str:
    """The download name of ``run``'s tidy data (``tidy_csv``)."""
    return f"{code}-v{label}-analysis-{run.number}-tidy.csv"


def tidy_csv(run: AnalysisRun) -> str:
    """The run's tidy data as CSV: one row per analysed response, from its stored inputs."""
    header, rows = get_pipeline(run.kind).tidy(inputs_document(run))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(["" if v is None else v for v in row] for row in rows)
    return out.getvalue()


def analysis_blob_readable(user: User, sha256: str) -> bool:
    """Blob-reading rule for analysis inputs and results: the protocol's PI and auditors, and
    only once the version's outcomes are unsealed (a sealed result is not served by hash)."""
    runs = AnalysisRun.objects.filter(result_id=sha256) | AnalysisRun.objects.filter(
        inputs_id=sha256
    )
    for run in runs.select_related("version"):
        if (
            outcomes_visible(run.version)
            and Membership.objects.filter(
                user=user,
                protocol_id=run.version.protocol_id,
                role__in=[Role.PI, Role.AUDITOR],
            ).exists()
        ):
            return True
    return False
