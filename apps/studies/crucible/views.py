"""CRUCIBLE's battery manifest page."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.accounts.access import AuthenticatedHttpRequest, signed_in_user
from apps.accounts.models import Role
from apps.analysis.access import get_analysis_version_for
from apps.studies.crucible.manifest import crucible_manifest_bytes, is_crucible

MANIFEST_ROLES = frozenset({Role.PI, Role.EDITOR, Role.AUDITOR})


@login_required
@require_GET
def crucible_manifest_page(
    request: AuthenticatedHttpRequest, code: str, label: str
) -> HttpResponse:
    """The CRUCIBLE battery manifest of a version (seed 001 §3–§5): scenario families and seed
    variants, autonomy rungs, the family → axis allocation and coverage states, with the
    manifest's SHA-256 and its blob link. 404 for a version whose plan is not CRUCIBLE's."""
    version = get_analysis_version_for(
        user=signed_in_user(request), code=code, label=label, roles=MANIFEST_ROLES
    )
    if not is_crucible(version):
        raise Http404("This version's plan is not a CRUCIBLE study.")
    content, digest = crucible_manifest_bytes(version)
    manifest = json.loads(content)
    axes = manifest["graded_axes"]
    allocation = [
        {
            "family": family["code"],
            "seeds": family["seed_variants"],
            "ranks": [axis in _ranked(manifest, family["code"]) for axis in axes],
        }
        for family in manifest["scenario_families"]
    ]
    return render(
        request,
        "studies/crucible/manifest.html",
        {
            "version": version,
            "manifest": manifest,
            "sha256": digest,
            "frozen": version.state != "draft",
            "allocation": allocation,
            "axes": axes,
        },
    )


def _ranked(manifest: dict[str, Any], family: str) -> list[str]:
    entry = manifest["family_axis_allocation"].get(family) or []
    return entry["ranks"] if isinstance(entry, dict) else entry
