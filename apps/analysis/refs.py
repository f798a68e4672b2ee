"""The deviation log's refs to analysis runs, and where they lead (registered in
``AnalysisConfig.ready()``)."""

from collections.abc import Mapping
from typing import Any

from django.urls import reverse

from apps.analysis.models import AnalysisRun


def run_ref(run: AnalysisRun) -> dict[str, Any]:
    """``{"type": "analysis_run", "id", "label", "number"}``; the number addresses the report."""
    return {
        "type": "analysis_run",
        "id": run.pk,
        "label": f"analysis run {run.number}",
        "number": run.number,
    }


def run_url(ref: Mapping[str, Any], version: tuple[str, str] | None) -> str | None:
    """The run's report page."""
    if version is None or "number" not in ref:
        return None
    code, label = version
    return reverse(
        "analysis:report", kwargs={"code": code, "label": label, "number": int(ref["number"])}
    )
