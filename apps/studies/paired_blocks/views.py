"""Route choice's fixtures page."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.accounts.access import AuthenticatedHttpRequest, signed_in_user
from apps.analysis.access import READ_ROLES, get_analysis_version_for
from apps.studies.paired_blocks.pipeline import fixtures_document


@login_required
@require_GET
def fixtures(request: AuthenticatedHttpRequest, code: str, label: str) -> HttpResponse:
    """Seed 002's fixtures page: each task's input and required output, and each factor level's
    wording and tool schema, with their SHA-256s (the frozen document's ``route_fixtures``)."""
    version = get_analysis_version_for(
        user=signed_in_user(request), code=code, label=label, roles=READ_ROLES
    )
    document = fixtures_document(version)
    if document is None:
        raise Http404("This plan has no route-choice fixtures.")
    return render(
        request, "studies/paired_blocks/fixtures.html", {"version": version, "fixtures": document}
    )
