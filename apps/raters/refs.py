"""The deviation log's refs to machine-score imports and oracle runs, and where they lead
(registered in ``RatersConfig.ready()``): both to the version's scorers page, which lists its
machine-score imports and its oracle runs."""

from collections.abc import Mapping
from typing import Any

from django.urls import reverse

from apps.raters.models import OracleRun


def oracle_run_ref(run: OracleRun) -> dict[str, Any]:
    """``{"type": "oracle_run", "id", "label"}``."""
    return {"type": "oracle_run", "id": run.pk, "label": f"oracle run {run.pk}"}


def scorers_url(ref: Mapping[str, Any], version: tuple[str, str] | None) -> str | None:
    """The version's scorers page: its machine-score imports and oracle runs."""
    if version is None:
        return None
    code, label = version
    return reverse("raters:scorers", kwargs={"code": code, "label": label})
