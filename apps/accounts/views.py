from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods
from rest_framework.authtoken.models import Token

from apps.accounts.access import AuthenticatedHttpRequest
from apps.accounts.models import Role
from apps.accounts.selectors import SIGHTED_ROLES, user_roles
from apps.accounts.services import api_token_rotate


def home(request: HttpRequest) -> HttpResponse:
    """Send each person to their own place: reviewers to their queue, auditors (who hold no
    other sighted role) to the logs, everyone else to protocols."""
    if not request.user.is_authenticated:
        return redirect("accounts:login")
    roles = user_roles(user=request.user)
    if Role.REVIEWER in roles and not roles & SIGHTED_ROLES:
        return redirect("raters:queue")
    if Role.AUDITOR in roles and not roles & {Role.PI, Role.EDITOR}:
        return redirect("deviations:index")
    return redirect("protocols:list")


@login_required
@require_http_methods(["GET", "POST"])
def api_token(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Show the user's API token; POST replaces it with a new one."""
    if request.method == "POST":
        api_token_rotate(user=request.user)
        messages.success(request, "A new API token was created; the old one no longer works.")
        return redirect("accounts:api-token")
    token = Token.objects.filter(user=request.user).first()
    return render(request, "accounts/api_token.html", {"token": token})
