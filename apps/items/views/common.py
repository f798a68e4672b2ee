"""What every design page shares: the signed-in user, the version read or written, the page's
context, and a service's refusal shown on the form or as messages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponseRedirect
from django.shortcuts import redirect
from django.urls import NoReverseMatch, reverse

from apps.accounts.access import signed_in_user
from apps.accounts.selectors import roles_for
from apps.core.forms import add_service_errors
from apps.items.access import DESIGN_WRITERS, get_design_version_for, version_kwargs
from apps.protocols.models import ProtocolVersion


def design_version(
    request: HttpRequest, protocol_code: str, label: str, *, write: bool = False
) -> ProtocolVersion:
    """The version whose design the page shows (``write``: changes) — 404 or 403 otherwise."""
    if write:
        return get_design_version_for(
            user=signed_in_user(request),
            protocol_code=protocol_code,
            label=label,
            roles=DESIGN_WRITERS,
        )
    return get_design_version_for(
        user=signed_in_user(request), protocol_code=protocol_code, label=label
    )


def can_write(request: HttpRequest, version: ProtocolVersion) -> bool:
    # Not set aside, not deposited: the services refuse those too, so no form is offered.
    return version.is_editable and bool(
        roles_for(user=signed_in_user(request), protocol_id=version.protocol_id) & DESIGN_WRITERS
    )


def _version_url(version: ProtocolVersion) -> str:
    # The version's own page belongs to the protocols app; until it exists, its list will do.
    try:
        return reverse("protocols:version", args=[version.protocol.code, version.label])
    except NoReverseMatch:
        return reverse("protocols:list")


def page_context(request: HttpRequest, version: ProtocolVersion, **extra: Any) -> dict[str, Any]:
    return {
        "version": version,
        "version_url": _version_url(version),
        "can_write": can_write(request, version),
        **extra,
    }


def run(form: forms.Form, call: Callable[[], object]) -> bool:
    """Call the service; on ValidationError put its messages on ``form`` and return False."""
    try:
        call()
    except ValidationError as error:
        add_service_errors(form, error)
        return False
    return True


def to_page(name: str, version: ProtocolVersion, **more: str) -> HttpResponseRedirect:
    """A redirect to the version's design page ``name`` (with ``more`` URL arguments)."""
    return redirect(reverse(name, kwargs={**version_kwargs(version), **more}))


def acted(request: HttpRequest, act: Callable[[], object], done: str) -> None:
    """Run ``act`` (a service call): its refusal shown as errors (``refused``), or ``done`` as a
    success message."""
    try:
        act()
    except ValidationError as error:
        refused(request, error)
    else:
        messages.success(request, done)


def refused(request: HttpRequest, error: ValidationError) -> None:
    for message in error.messages:
        messages.error(request, message)
