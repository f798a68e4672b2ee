"""OPB-01 §6.1's panel pages: the panel's progress, CSV import, and flagging one item at a time.

The PI or an editor enters each panel member's flags (members are people shown the Family A
item set, not blind reviewers of responses, and hold no account here). Flags are observations:
they may be entered on a frozen version.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from apps.accounts.access import signed_in_user
from apps.accounts.selectors import roles_for
from apps.items.access import (
    DESIGN_WRITERS,
    get_design_version_for,
    get_panel_member_for,
    version_kwargs,
)
from apps.items.selectors import panel_flagged_codes, panel_item_forms, panel_members_progress
from apps.items.views.common import refused
from apps.protocols.models import ProtocolVersion
from apps.studies.opb.panel import (
    panel_family_a_items,
    panel_flag_record,
    panel_flags_import,
    panel_member_add,
)

MAX_PANEL_CSV_BYTES = 2 * 1024 * 1024


def _writable_version(
    request: HttpRequest, protocol_code: str, label: str
) -> tuple[ProtocolVersion, bool]:
    user = signed_in_user(request)
    version = get_design_version_for(user=user, protocol_code=protocol_code, label=label)
    can_write = bool(roles_for(user=user, protocol_id=version.protocol_id) & DESIGN_WRITERS)
    return version, can_write


def _panel_url(version: ProtocolVersion) -> str:
    return reverse("studies:panel", kwargs=version_kwargs(version))


@login_required
@require_http_methods(["GET", "POST"])
def panel(request: HttpRequest, protocol_code: str, label: str) -> HttpResponse:
    """The panel: its members with their progress, adding a member, importing a CSV."""
    version, can_write = _writable_version(request, protocol_code, label)
    if request.method == "POST":
        if not can_write:
            raise PermissionDenied("Only the PI or an editor records the panel's flags.")
        try:
            if "csv" in request.FILES:
                upload = request.FILES["csv"]
                # Django's upload parsing gives each file it keeps a name and a size.
                if (
                    not isinstance(upload, UploadedFile)
                    or upload.size is None
                    or upload.name is None
                ):
                    raise AssertionError(f"unreachable: the csv upload is {upload!r}")
                if upload.size > MAX_PANEL_CSV_BYTES:
                    raise ValidationError(f"{upload.name}: larger than 2 MB")
                outcome = panel_flags_import(
                    version=version,
                    user=signed_in_user(request),
                    content=upload.read(),
                    filename=upload.name,
                )
                messages.success(
                    request,
                    f"Imported {outcome.flags} flags ({outcome.members_added} new members).",
                )
            else:
                member = panel_member_add(
                    version=version,
                    actor=signed_in_user(request),
                    code=request.POST.get("code", ""),
                )
                return redirect(
                    reverse(
                        "studies:panel-member",
                        kwargs={**version_kwargs(version), "code": member.code},
                    )
                )
        except ValidationError as error:
            refused(request, error)
        return redirect(_panel_url(version))
    items = panel_family_a_items(version)
    members = panel_members_progress(version)
    return render(
        request,
        "studies/opb/panel.html",
        {"version": version, "can_write": can_write, "members": members, "n_items": len(items)},
    )


@login_required
@require_http_methods(["GET", "POST"])
def panel_member(request: HttpRequest, protocol_code: str, label: str, code: str) -> HttpResponse:
    """One member's flags, one Family A item at a time: the next item not yet recorded."""
    version, can_write = _writable_version(request, protocol_code, label)
    person = get_panel_member_for(version=version, code=code)
    here = reverse("studies:panel-member", kwargs={**version_kwargs(version), "code": person.code})
    if request.method == "POST":
        if not can_write:
            raise PermissionDenied("Only the PI or an editor records the panel's flags.")
        choice = request.POST.get("flag")
        if choice not in ("yes", "no"):
            messages.error(request, "Choose flag or do not flag.")
        else:
            try:
                panel_flag_record(
                    version=version,
                    actor=signed_in_user(request),
                    member=person,
                    item_code=request.POST.get("item", ""),
                    flagged=choice == "yes",
                )
            except ValidationError as error:
                refused(request, error)
        return redirect(here)
    done = panel_flagged_codes(person)
    items = panel_family_a_items(version)
    pending = [item for item in items if item.code not in done]
    item = pending[0] if pending else None
    cells = panel_item_forms(item) if item else []
    return render(
        request,
        "studies/opb/panel_member.html",
        {
            "version": version,
            "can_write": can_write,
            "member": person,
            "item": item,
            "cells": cells,
            "position": len(done) + 1,
            "n_items": len(items),
            "panel_url": _panel_url(version),
        },
    )
