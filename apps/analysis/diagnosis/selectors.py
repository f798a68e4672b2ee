"""Reads of design diagnoses: a version's diagnoses, the one its frozen document names, and who
may read a diagnosis blob."""

from __future__ import annotations

import json
from typing import Any

from django.db.models import QuerySet

from apps.accounts.models import Membership, User
from apps.accounts.selectors import SIGHTED_ROLES
from apps.analysis.models import DesignDiagnosis, DiagnosisState
from apps.protocols.access import EDIT_ROLES
from apps.protocols.models import ProtocolVersion


def version_diagnoses(version: ProtocolVersion) -> QuerySet[DesignDiagnosis]:
    """The version's diagnoses, newest first, with their requester."""
    return DesignDiagnosis.objects.filter(version=version).select_related("requested_by")


def latest_diagnosis(version: ProtocolVersion) -> DesignDiagnosis | None:
    """The version's latest succeeded diagnosis (the one its frozen document names), or None."""
    return (
        DesignDiagnosis.objects.filter(version=version, state=DiagnosisState.SUCCEEDED)
        .select_related("result")
        .order_by("-number")
        .first()
    )


def diagnosis_document(diagnosis: DesignDiagnosis) -> dict[str, Any] | None:
    """A succeeded diagnosis' result document (parsed), else None."""
    if diagnosis.result is None:
        return None
    document: dict[str, Any] = json.loads(bytes(diagnosis.result.content))
    return document


def diagnosis_document_part(version: ProtocolVersion) -> dict[str, Any] | None:
    """The frozen document's ``design_diagnosis`` part (issue #35 §5): the latest succeeded
    diagnosis' blob hash, its world (with the defaults it used), seed, simulations and curve;
    None when the version has none (the key is then left out, so documents frozen before
    diagnoses existed keep their bytes)."""
    diagnosis = latest_diagnosis(version)
    if diagnosis is None:
        return None
    document = diagnosis_document(diagnosis) or {}
    size = document.get("size") or None
    return {
        "sha256": diagnosis.result_id,
        "kind": document.get("kind"),
        "world": document.get("world", diagnosis.world),
        "seed": diagnosis.seed,
        "sims": diagnosis.sims,
        "size": None if size is None else {"name": size["name"], "values": size["values"]},
    }


def diagnosis_blob_readable(user: User, sha256: str) -> bool:
    """Blob-reading rule for diagnosis documents, the rule of the version it diagnoses: a
    frozen (or set-aside) version's by the protocol's sighted members (PI, editors, auditors);
    a draft still being written's by its PI and editors only, as its pages are
    (``apps.protocols.access``); never a reviewer's."""
    for version in ProtocolVersion.objects.filter(design_diagnoses__result_id=sha256).distinct():
        roles = EDIT_ROLES if version.is_editable else SIGHTED_ROLES
        if Membership.objects.filter(
            user=user, protocol_id=version.protocol_id, role__in=roles
        ).exists():
            return True
    return False


def diagnosis_blobs_of(versions: QuerySet[ProtocolVersion]) -> QuerySet[DesignDiagnosis]:
    """The succeeded diagnoses of ``versions`` (the registry makes a public version's named
    diagnosis public)."""
    return DesignDiagnosis.objects.filter(version__in=versions, state=DiagnosisState.SUCCEEDED)
