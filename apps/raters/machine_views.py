"""Pages of machine scoring (PI and editors; 404 for blind reviewers): the scorer roster, the
import of machine scores with a preview, and oracle runs."""

from __future__ import annotations

import json
from functools import partial
from typing import cast

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from apps.accounts.access import signed_in_user
from apps.core.forms import JSONField, service_on_post
from apps.core.inputs import json_loads
from apps.protocols.import_frame import ImportProblem, ImportRejected
from apps.raters.access import get_rubric_version_for
from apps.raters.final import machine_dashboard
from apps.raters.machine_import import with_scorer
from apps.raters.models import Comparison, ScorerKind, ScorerRosterEntry
from apps.raters.services.machine import machine_scores_import, oracle_run_request
from apps.raters.services.scorers import scorer_register, scorer_roster_enroll
from apps.responses.formats import guess_format
from apps.responses.forms import FORMAT_CHOICES, upload_size_problem
from apps.responses.staging import preview_discard, preview_load, preview_store


class ScorerEnrollForm(forms.Form):
    """A scorer's identity (registered, or found by its hash) and its place on the roster."""

    code = forms.CharField(max_length=64, help_text="How import files name it, e.g. judge-1.")
    role = forms.SlugField(max_length=64, help_text="The role rubric fields name, e.g. judge.")
    label = forms.CharField(max_length=200, required=False)
    kind = forms.ChoiceField(choices=ScorerKind.choices)
    name = forms.CharField(max_length=200)
    version = forms.CharField(max_length=100, help_text="The scorer's own version or commit.")
    model = forms.CharField(max_length=200, required=False, help_text="LLM judges: the model.")
    provider = forms.CharField(max_length=200, required=False)
    inference_settings = JSONField(required=False, help_text='As JSON: {"temperature": 0}.')
    prompt = forms.CharField(required=False, strip=False, widget=forms.Textarea(attrs={"rows": 4}))
    prompt_sha256 = forms.CharField(
        max_length=64, required=False, help_text="Or the SHA-256 of the rubric blob it was given."
    )
    comparison = forms.ChoiceField(choices=Comparison.choices, required=False)
    params = JSONField(
        required=False,
        help_text='An Inspect scorer\'s parameters as its log records them: {"limit": 5}.',
    )
    epochs = forms.CharField(
        max_length=32,
        required=False,
        initial="each",
        help_text="How its values over a cell's repetitions (Inspect's epochs) combine: each, "
        "mean, mode, max or at_least:<k>.",
    )


class MachineImportForm(forms.Form):
    file = forms.FileField(help_text="CSV, JSON Lines, or an Inspect AI log (.eval or .json).")
    format = forms.ChoiceField(choices=FORMAT_CHOICES, required=False)
    scorer = forms.ChoiceField(required=False, help_text="When the rows do not name it.")
    mapping = JSONField(
        required=False,
        help_text='Optional, as JSON: {"scores": {"includes": "complied"}} for an Inspect log, '
        '{"fields": {"loss1": "judge_loss"}}, {"position": "row_position"}.',
    )
    note = forms.CharField(max_length=500, required=False)

    def __init__(self, *args, codes: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        scorer = cast(forms.ChoiceField, self.fields["scorer"])
        scorer.choices = [("", "Named in each row")] + [(c, c) for c in codes]


class MachineConfirmForm(forms.Form):
    sha256 = forms.RegexField(regex=r"^[0-9a-f]{64}$", widget=forms.HiddenInput)
    filename = forms.CharField(widget=forms.HiddenInput)
    format = forms.CharField(widget=forms.HiddenInput)
    scorer = forms.CharField(widget=forms.HiddenInput, required=False)
    mapping = forms.CharField(widget=forms.HiddenInput, required=False)
    note = forms.CharField(widget=forms.HiddenInput, required=False)


@login_required
@require_http_methods(["GET", "POST"])
def scorers(request: HttpRequest, version_id: int) -> HttpResponse:
    """The scorer roster (enrol scorers while the version is a draft), imports, oracle runs."""
    version = get_rubric_version_for(user=signed_in_user(request), pk=version_id)
    form = ScorerEnrollForm(request.POST or None) if version.is_draft else None

    def enrol(form: ScorerEnrollForm) -> str:
        data = dict(form.cleaned_data)
        code, role, label = data.pop("code"), data.pop("role"), data.pop("label")
        epochs = data.pop("epochs") or "each"
        scorer, _ = scorer_register(user=signed_in_user(request), label=label, **data)
        scorer_roster_enroll(
            version=version,
            scorer=scorer,
            code=code,
            role=role,
            user=signed_in_user(request),
            epochs=epochs,
        )
        return f"{code} is on the scorer roster ({scorer})."

    if form is not None and (enrolled := service_on_post(request, form, partial(enrol, form))):
        messages.success(request, enrolled)
        return redirect("raters:scorers", code=version.protocol.code, label=version.label)
    return render(
        request,
        "raters/scorers.html",
        {"version": version, "machine": machine_dashboard(version), "form": form},
    )


@login_required
@require_http_methods(["GET", "POST"])
def machine_import(request: HttpRequest, version_id: int) -> HttpResponse:
    """Upload a file of machine scores: checked and previewed; nothing written until confirmed."""
    version = get_rubric_version_for(user=signed_in_user(request), pk=version_id)
    codes = list(
        ScorerRosterEntry.objects.filter(version=version)
        .order_by("position")
        .values_list("code", flat=True)
    )
    form = MachineImportForm(request.POST or None, request.FILES or None, codes=codes)
    problems: list[ImportProblem] = []
    total = 0
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        if problem := upload_size_problem(upload):
            form.add_error("file", problem)
        else:
            data = upload.read()
            format = form.cleaned_data["format"] or guess_format(upload.name)
            mapping = form.cleaned_data["mapping"] or None
            scorer = form.cleaned_data["scorer"] or None
            note = form.cleaned_data["note"]
            try:
                outcome = machine_scores_import(
                    version=version,
                    user=signed_in_user(request),
                    data=data,
                    filename=upload.name,
                    format=format,
                    mapping=with_scorer(mapping, scorer),
                    note=note,
                    dry_run=True,
                )
            except ImportRejected as rejected:
                problems, total = rejected.on_form(form)
            except ValidationError as error:
                form.add_error(None, error.messages)
            else:
                if outcome.status == "already_imported":
                    messages.info(request, outcome.message)
                    return redirect(
                        "raters:scorers", code=version.protocol.code, label=version.label
                    )
                # Kept where response previews wait: for this person and this version only.
                digest = preview_store(
                    user_id=signed_in_user(request).pk, version=version, data=data
                )
                confirm = MachineConfirmForm(
                    initial={
                        "sha256": digest,
                        "filename": upload.name,
                        "format": format,
                        "scorer": scorer or "",
                        "mapping": json.dumps(mapping) if mapping else "",
                        "note": note,
                    }
                )
                return render(
                    request,
                    "raters/machine_import_preview.html",
                    {"version": version, "outcome": outcome, "confirm": confirm},
                )
    return render(
        request,
        "raters/machine_import.html",
        {"version": version, "form": form, "problems": problems, "total": total},
    )


@login_required
@require_POST
def machine_import_confirm(request: HttpRequest, version_id: int) -> HttpResponse:
    version = get_rubric_version_for(user=signed_in_user(request), pk=version_id)
    form = MachineConfirmForm(request.POST)
    again = redirect("raters:machine-import", code=version.protocol.code, label=version.label)
    if not form.is_valid():
        messages.error(request, "The confirmation was incomplete; upload the file again.")
        return again
    digest = form.cleaned_data["sha256"]
    data = preview_load(user_id=signed_in_user(request).pk, version=version, digest=digest)
    if data is None:
        messages.error(request, "The uploaded file is no longer here; upload it again.")
        return again
    try:
        mapping = json_loads(form.cleaned_data["mapping"]) if form.cleaned_data["mapping"] else None
        outcome = machine_scores_import(
            version=version,
            user=signed_in_user(request),
            data=data,
            filename=form.cleaned_data["filename"],
            format=form.cleaned_data["format"],
            mapping=with_scorer(mapping, form.cleaned_data["scorer"] or None),
            note=form.cleaned_data["note"],
        )
    except (ValidationError, ValueError) as error:
        messages.error(
            request,
            "Nothing was imported: " + " ".join(getattr(error, "messages", [str(error)])[:5]),
        )
        return again
    preview_discard(user_id=signed_in_user(request).pk, version=version, digest=digest)
    messages.success(request, outcome.message)
    return redirect("raters:scorers", code=version.protocol.code, label=version.label)


@login_required
@require_POST
def oracle_run(request: HttpRequest, version_id: int, code: str) -> HttpResponse:
    """Queue an oracle run of the roster's oracle ``code``."""
    version = get_rubric_version_for(user=signed_in_user(request), pk=version_id)
    try:
        run = oracle_run_request(version=version, scorer_code=code, user=signed_in_user(request))
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, f"Oracle run {run.pk} is queued; its progress is shown below.")
    return redirect("raters:scorers", code=version.protocol.code, label=version.label)
