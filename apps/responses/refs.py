"""The deviation log's refs to attempts and imports, and where they lead (registered in
``ResponsesConfig.ready()``)."""

from collections.abc import Mapping
from typing import Any

from django.urls import reverse

from apps.responses.models import Attempt


def attempt_ref(attempt: Attempt) -> dict[str, Any]:
    """``{"type": "attempt", "id", "label", "position", "number"}``: the administration's
    position and the attempt's number address its page without a lookup."""
    return {
        "type": "attempt",
        "id": attempt.pk,
        "label": f"attempt {attempt.number}",
        "position": attempt.administration.position,
        "number": attempt.number,
    }


def attempt_url(ref: Mapping[str, Any], version: tuple[str, str] | None) -> str | None:
    """The attempt's page (refs written before ``position`` was recorded stay plain text)."""
    if version is None or "position" not in ref:
        return None
    code, label = version
    kwargs = {"position": int(ref["position"]), "number": int(ref["number"])}
    return reverse("responses:attempt", kwargs={"code": code, "label": label, **kwargs})


def import_url(ref: Mapping[str, Any], version: tuple[str, str] | None) -> str | None:
    """The version's list of response imports."""
    if version is None:
        return None
    code, label = version
    return reverse("responses:imports", kwargs={"code": code, "label": label})
