"""Pages: evaluands, a version's roster, its responses, imports (upload → preview → confirm),
attempts, exclusions and control validations.
None of them is reachable by a blind reviewer (404)."""

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from apps.accounts.access import AuthenticatedHttpRequest
from apps.accounts.models import Role
from apps.accounts.selectors import roles_for
from apps.core.access import first_or_404
from apps.core.forms import add_service_errors, service_on_post
from apps.protocols.import_frame import ImportProblem, ImportRejected
from apps.responses.access import (
    PI_ROLES,
    READ_ROLES,
    WRITE_ROLES,
    get_attempt_for,
    get_evaluand_for,
    get_responses_version_for,
    require_evaluand_author,
    require_evaluand_writer,
)
from apps.responses.formats import guess_format
from apps.responses.forms import (
    ControlValidationForm,
    EvaluandForm,
    ExclusionForm,
    ImportConfirmForm,
    ImportUploadForm,
    RosterEnrollForm,
    SessionGuaranteeForm,
)
from apps.responses.models import IDENTITY_FIELDS, RosterEntry, TerminalOutcome
from apps.responses.selectors import (
    attempts_of,
    control_validations_of,
    evaluands_visible_to,
    exclusion_reasons,
    imports_of,
    responses_summary,
    roster_code,
    roster_of,
)
from apps.responses.services import (
    control_validation_record,
    evaluand_register,
    evaluand_revise,
    exclusion_record,
    responses_import,
    roster_enroll,
    roster_remove,
)
from apps.responses.staging import preview_discard, preview_stage, preview_staged
from apps.responses.surfaces import session_guarantee_record


def _identity_values(cleaned: dict) -> dict:
    return {name: cleaned.get(name) for name in IDENTITY_FIELDS}


# Evaluands


@login_required
def evaluand_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    require_evaluand_author(user=request.user)
    return render(
        request,
        "responses/evaluand_list.html",
        {"evaluands": evaluands_visible_to(user=request.user)},
    )


@login_required
@require_http_methods(["GET", "POST"])
def evaluand_new(request: AuthenticatedHttpRequest) -> HttpResponse:
    require_evaluand_writer(user=request.user)
    form = EvaluandForm(request.POST or None)
    registered = service_on_post(
        request,
        form,
        lambda: evaluand_register(
            user=request.user,
            label=form.cleaned_data["label"],
            **_identity_values(form.cleaned_data),
        ),
    )
    if registered is not None:
        evaluand, created = registered
        if created:
            messages.success(request, f"Evaluand {evaluand} registered.")
        else:
            messages.info(request, f"This identity is already registered as {evaluand}.")
        return redirect("responses:evaluand", pk=evaluand.pk)
    return render(request, "responses/evaluand_form.html", {"form": form, "revising": None})


@login_required
def evaluand_detail(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    evaluand = get_evaluand_for(user=request.user, pk=pk)
    visible = evaluands_visible_to(user=request.user)
    return render(
        request,
        "responses/evaluand_detail.html",
        {
            "evaluand": evaluand,
            "identity": [(name, getattr(evaluand, name)) for name in IDENTITY_FIELDS],
            "derivatives": visible.filter(derived_from=evaluand),
            "guarantee": getattr(evaluand, "session_guarantee", None),
            "guarantee_form": SessionGuaranteeForm(),
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def evaluand_fresh_session(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """Record the evaluand's fresh-session guarantee (OPB-01 §6.3): once, append-only."""
    evaluand = get_evaluand_for(user=request.user, pk=pk)
    require_evaluand_writer(user=request.user)
    if hasattr(evaluand, "session_guarantee"):
        messages.info(request, f"{evaluand}'s fresh-session guarantee is already recorded.")
        return redirect("responses:evaluand", pk=evaluand.pk)
    form = SessionGuaranteeForm(request.POST or None)
    record = service_on_post(
        request,
        form,
        lambda: session_guarantee_record(evaluand=evaluand, user=request.user, **form.cleaned_data),
    )
    if record is not None:
        messages.success(
            request, f"Fresh session for {evaluand}: {record.get_fresh_session_display()}."
        )
        return redirect("responses:evaluand", pk=evaluand.pk)
    return render(
        request, "responses/evaluand_fresh_session.html", {"evaluand": evaluand, "form": form}
    )


@login_required
@require_http_methods(["GET", "POST"])
def evaluand_revise_view(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    evaluand = get_evaluand_for(user=request.user, pk=pk)
    require_evaluand_writer(user=request.user)
    initial = {"label": evaluand.label, **evaluand.identity()}
    form = EvaluandForm(request.POST or None, initial=initial)
    revised = service_on_post(
        request,
        form,
        lambda: evaluand_revise(
            evaluand=evaluand,
            user=request.user,
            label=form.cleaned_data["label"],
            **_identity_values(form.cleaned_data),
        ),
    )
    if revised is not None:
        messages.success(
            request, f"New evaluand {revised} derived from {evaluand}; the old one is kept."
        )
        return redirect("responses:evaluand", pk=revised.pk)
    return render(request, "responses/evaluand_form.html", {"form": form, "revising": evaluand})


# Roster


@login_required
@require_http_methods(["GET", "POST"])
def roster(request: AuthenticatedHttpRequest, code: str, label: str) -> HttpResponse:
    version = get_responses_version_for(
        user=request.user,
        code=code,
        label=label,
        roles=WRITE_ROLES if request.method == "POST" else READ_ROLES,
    )
    form = RosterEnrollForm(request.POST or None, evaluands=evaluands_visible_to(user=request.user))
    entry = service_on_post(
        request,
        form,
        lambda: roster_enroll(
            version=version,
            evaluand=form.cleaned_data["evaluand"],
            code=form.cleaned_data["code"],
            user=request.user,
        ),
    )
    if entry is not None:
        messages.success(request, f"{entry.evaluand} enrolled as {entry.code}.")
        return redirect("responses:roster", code=version.protocol.code, label=version.label)
    return render(
        request,
        "responses/roster.html",
        {"version": version, "roster": roster_of(version), "form": form},
    )


@login_required
@require_POST
def roster_remove_view(
    request: AuthenticatedHttpRequest, code: str, label: str, entry: str
) -> HttpResponse:
    version = get_responses_version_for(
        user=request.user, code=code, label=label, roles=WRITE_ROLES
    )
    row = first_or_404(
        RosterEntry.objects.filter(version=version, code=entry), "No such roster entry."
    )
    try:
        roster_remove(entry=row, user=request.user)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, f"{row.code} taken off the roster.")
    return redirect("responses:roster", code=version.protocol.code, label=version.label)


# Responses and imports


@login_required
def responses_page(request: AuthenticatedHttpRequest, code: str, label: str) -> HttpResponse:
    version = get_responses_version_for(user=request.user, code=code, label=label)
    summary = responses_summary(version)
    return render(
        request,
        "responses/responses.html",
        {
            "version": version,
            "summary": summary,
            "outcome_labels": [TerminalOutcome(o).label for o in summary.outcomes],
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def import_upload(request: AuthenticatedHttpRequest, code: str, label: str) -> HttpResponse:
    version = get_responses_version_for(
        user=request.user, code=code, label=label, roles=WRITE_ROLES
    )
    codes = [entry.code for entry in roster_of(version)]
    posted = request.method == "POST"
    form = ImportUploadForm(
        request.POST if posted else None, request.FILES if posted else None, roster_codes=codes
    )
    problems: list[ImportProblem] = []
    total = 0
    kept: dict | None = None
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        if upload is not None:
            # The upload itself, not its bytes: one spooled to disk is read from there.
            data, filename = upload, upload.name
        else:
            digest = form.cleaned_data["kept_sha256"]
            filename = form.cleaned_data["kept_filename"]
            data = preview_staged(user_id=request.user.pk, version=version, digest=digest)
            if data is None:
                form.add_error(
                    "file", f"The kept file {filename} is no longer here; choose it again."
                )
                return _upload_page(request, version, form)
            kept = {"sha256": digest, "filename": filename}
        format = form.cleaned_data["format"] or guess_format(filename)
        mapping = form.import_mapping()
        note = form.cleaned_data["note"]
        try:
            outcome = responses_import(
                version=version,
                user=request.user,
                data=data,
                filename=filename,
                format=format,
                mapping=mapping,
                note=note,
                dry_run=True,
            )
        except ImportRejected as rejected:
            problems, total = rejected.on_form(form)
            kept = kept or _keep(request, version, upload)
        except ValidationError as error:
            add_service_errors(form, error)
            kept = kept or _keep(request, version, upload)
        else:
            if outcome.status == "already_imported":
                messages.info(request, outcome.message)
                return redirect(
                    "responses:imports", code=version.protocol.code, label=version.label
                )
            if upload is not None:
                digest = preview_stage(user_id=request.user.pk, version=version, upload=upload)
            # (else: the kept file is staged already, under the digest it was kept by)
            confirm = ImportConfirmForm(
                initial={
                    "sha256": digest,
                    "filename": filename,
                    "format": format,
                    "mapping": json.dumps(mapping),
                    "note": note,
                }
            )
            return render(
                request,
                "responses/import_preview.html",
                {
                    "version": version,
                    "outcome": outcome,
                    "confirm": confirm,
                    "filename": filename,
                },
            )
    elif posted:
        upload = form.cleaned_data.get("file")
        if upload is not None and not form.has_error("file"):
            kept = _keep(request, version, upload)
        elif form.cleaned_data.get("kept_sha256") and form.cleaned_data.get("kept_filename"):
            kept = {
                "sha256": form.cleaned_data["kept_sha256"],
                "filename": form.cleaned_data["kept_filename"],
            }
    return _upload_page(request, version, form, problems=problems, total=total, kept=kept)


def _keep(request: AuthenticatedHttpRequest, version, upload) -> dict | None:
    """Keep a refused upload on the server (where previews wait) so the person can fix the
    mapping or the format and re-submit without choosing the file again."""
    if upload is None:
        return None
    digest = preview_stage(user_id=request.user.pk, version=version, upload=upload)
    return {"sha256": digest, "filename": upload.name}


def _upload_page(request, version, form, *, problems=(), total=0, kept=None) -> HttpResponse:
    return render(
        request,
        "responses/import_upload.html",
        {"version": version, "form": form, "problems": problems, "total": total, "kept": kept},
    )


@login_required
@require_POST
def import_confirm(request: AuthenticatedHttpRequest, code: str, label: str) -> HttpResponse:
    version = get_responses_version_for(
        user=request.user, code=code, label=label, roles=WRITE_ROLES
    )
    form = ImportConfirmForm(request.POST)
    if not form.is_valid():
        messages.error(request, "The confirmation was incomplete; upload the file again.")
        return redirect("responses:import", code=version.protocol.code, label=version.label)
    digest = form.cleaned_data["sha256"]
    data = preview_staged(user_id=request.user.pk, version=version, digest=digest)
    if data is None:
        messages.error(request, "The uploaded file is no longer here; upload it again.")
        return redirect("responses:import", code=version.protocol.code, label=version.label)
    try:
        outcome = responses_import(
            version=version,
            user=request.user,
            data=data,
            filename=form.cleaned_data["filename"],
            format=form.cleaned_data["format"],
            mapping=form.cleaned_data["mapping"],
            note=form.cleaned_data["note"],
        )
    except ValidationError as error:
        # The schedule cannot change, but another file may have been imported meanwhile.
        messages.error(request, "Nothing was imported: " + " ".join(error.messages[:5]))
        return redirect("responses:import", code=version.protocol.code, label=version.label)
    preview_discard(user_id=request.user.pk, version=version, digest=digest)
    messages.success(request, outcome.message)
    return redirect("responses:imports", code=version.protocol.code, label=version.label)


@login_required
def import_history(request: AuthenticatedHttpRequest, code: str, label: str) -> HttpResponse:
    version = get_responses_version_for(user=request.user, code=code, label=label)
    return render(
        request,
        "responses/import_history.html",
        {"version": version, "imports": imports_of(version)},
    )


# Attempts and exclusions


@login_required
def attempt_list(request: AuthenticatedHttpRequest, code: str, label: str) -> HttpResponse:
    version = get_responses_version_for(user=request.user, code=code, label=label)
    page = Paginator(attempts_of(version), 100).get_page(request.GET.get("page"))
    codes = {entry.evaluand_id: entry.code for entry in roster_of(version)}
    for attempt in page.object_list:
        # A display attribute for the template, not a field of Attempt.
        evaluand_code = codes.get(attempt.administration.evaluand_id, "")
        attempt.evaluand_code = evaluand_code  # type: ignore[attr-defined]
    return render(request, "responses/attempt_list.html", {"version": version, "page": page})


@login_required
def attempt_detail_view(
    request: AuthenticatedHttpRequest, code: str, label: str, position: int, number: int
) -> HttpResponse:
    attempt = get_attempt_for(
        user=request.user, code=code, label=label, position=position, number=number
    )
    return render(
        request,
        "responses/attempt_detail.html",
        {
            "attempt": attempt,
            "version": attempt.version,
            "code": roster_code(attempt.administration),
            "exclusion": next(iter(attempt.exclusions.all()), None),
            "raw": json.dumps(attempt.raw, indent=2, ensure_ascii=False, sort_keys=True),
            "session_columns": getattr(attempt, "session_columns", None),
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def exclusion_new(
    request: AuthenticatedHttpRequest, code: str, label: str, position: int, number: int
) -> HttpResponse:
    attempt = get_attempt_for(
        user=request.user, code=code, label=label, position=position, number=number, roles=PI_ROLES
    )
    form = ExclusionForm(request.POST or None, reasons=exclusion_reasons(attempt.version))
    exclusion = service_on_post(
        request,
        form,
        lambda: exclusion_record(attempt=attempt, user=request.user, **form.cleaned_data),
    )
    if exclusion is not None:
        messages.success(
            request, "Attempt excluded; it stays visible and counted, and the log says so."
        )
        return redirect(
            "responses:attempt",
            code=code,
            label=label,
            position=attempt.administration.position,
            number=attempt.number,
        )
    return render(
        request,
        "responses/exclusion_form.html",
        {"attempt": attempt, "version": attempt.version, "form": form},
    )


# Control validations (CRUCIBLE §7)


@login_required
@require_http_methods(["GET", "POST"])
def control_validations(request: AuthenticatedHttpRequest, code: str, label: str) -> HttpResponse:
    """Every control validation of the version, newest first, and (PI, frozen version) the form
    recording one. Read by the PI, editors and auditors; a reviewer gets 404 (blinding)."""
    version = get_responses_version_for(user=request.user, code=code, label=label)
    is_pi = Role.PI in roles_for(user=request.user, protocol_id=version.protocol_id)
    if request.method == "POST" and not is_pi:
        # Editors and auditors read; recording is the PI's (403 with its reason).
        get_responses_version_for(user=request.user, code=code, label=label, roles=PI_ROLES)
    form = ControlValidationForm(request.POST or None) if is_pi else None
    if form is not None and (
        record := service_on_post(
            request,
            form,
            lambda: control_validation_record(
                version=version, user=request.user, **form.cleaned_data
            ),
        )
    ):
        messages.success(
            request,
            f"Control validation of {record.environment} recorded: {record.result}. "
            "It is logged and never changed; a later record supersedes it.",
        )
        return redirect("responses:control-validations", code=code, label=label)
    return render(
        request,
        "responses/control_validations.html",
        {
            "version": version,
            "records": control_validations_of(version),
            "form": form,
            "frozen": version.state != "draft",
        },
    )
