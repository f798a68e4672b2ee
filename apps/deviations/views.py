from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from apps.accounts.models import Role
from apps.protocols.models import Protocol


@login_required
def log_index(request: HttpRequest) -> HttpResponse:
    """The protocols whose deviation log the user may read (auditors and PIs)."""
    protocols = (
        Protocol.objects.filter(
            memberships__user=request.user, memberships__role__in=[Role.AUDITOR, Role.PI]
        )
        .distinct()
        .order_by("code")
    )
    return render(request, "deviations/log_index.html", {"protocols": protocols})
