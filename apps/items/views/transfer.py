"""Importing a design from a CSV or JSON file (a dry run first, then the confirmed write) and
exporting it in the same format."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods, require_POST

from apps.accounts.access import signed_in_user
from apps.core.forms import add_service_errors
from apps.core.views import attachment
from apps.items import services
from apps.items.forms import ImportForm
from apps.items.services.transfer import FORMATS, MAX_IMPORT_BYTES, import_format_for
from apps.items.views.common import design_version, page_context, refused, to_page

IMPORT_SESSION_KEY = "items.design_import"


@login_required
@require_http_methods(["GET", "POST"])
def design_import(request: HttpRequest, protocol_code: str, label: str) -> HttpResponse:
    """Upload a file and see the dry run: the rows it would write, or every error. The file is
    kept in the session (with its SHA-256) until it is confirmed or replaced."""
    version = design_version(request, protocol_code, label, write=True)
    form = ImportForm(request.POST or None, request.FILES or None)
    plan = None
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            fmt = import_format_for(upload.name, form.cleaned_data["format"])
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            if upload.size > MAX_IMPORT_BYTES:
                form.add_error("file", "The file is larger than 5 MB; split it.")
            else:
                content = upload.read()
                plan = services.design_import_plan(
                    version=version, content=content, fmt=fmt, filename=upload.name
                )
                request.session[IMPORT_SESSION_KEY] = {
                    "version": version.pk,
                    "sha256": plan.sha256,
                    "format": fmt,
                    "filename": upload.name,
                    "content": content.decode("utf-8", errors="replace"),
                }
    context = page_context(request, version, form=form, plan=plan)
    return render(request, "items/import.html", context)


@login_required
@require_POST
def design_import_confirm(request: HttpRequest, protocol_code: str, label: str) -> HttpResponse:
    version = design_version(request, protocol_code, label, write=True)
    pending = request.session.get(IMPORT_SESSION_KEY)
    if (
        not pending
        or pending.get("version") != version.pk
        or pending.get("sha256") != request.POST.get("sha256")
    ):
        messages.error(request, "That upload is no longer waiting; upload the file again.")
        return to_page("items:import", version)
    try:
        plan = services.design_import(
            version=version,
            content=pending["content"].encode("utf-8"),
            fmt=pending["format"],
            actor=signed_in_user(request),
            filename=pending["filename"],
        )
    except services.DesignImportRefused as refusal:
        context = page_context(request, version, form=ImportForm(), plan=refusal.plan)
        return render(request, "items/import.html", context)
    except ValidationError as error:
        refused(request, error)
        return to_page("items:import", version)
    del request.session[IMPORT_SESSION_KEY]
    counts = plan.counts()
    messages.success(
        request,
        f"Imported {pending['filename']}: {counts['create']} cells created, "
        f"{counts['replace']} replaced, {counts['unchanged']} unchanged.",
    )
    return to_page("items:design", version)


@login_required
def design_export(request: HttpRequest, protocol_code: str, label: str, fmt: str) -> HttpResponse:
    version = design_version(request, protocol_code, label)
    if fmt not in FORMATS:
        raise Http404("Export as .csv or .json.")
    try:
        text = services.design_export(version=version, fmt=fmt)
    except ValidationError as error:  # an integrity alarm: the rows are not what was frozen
        return HttpResponse(
            " ".join(error.messages), status=409, content_type="text/plain; charset=utf-8"
        )
    media = "text/csv" if fmt == "csv" else "application/json"
    name = f"{version.protocol.code}-v{version.label}-design.{fmt}"
    return attachment(text, content_type=f"{media}; charset=utf-8", filename=name)
