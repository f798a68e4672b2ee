"""The draft's design diagnosis page (issue #35 §6): the world's form, the latest diagnosis as
a table (diagnosand × estimate, with MC SE) with plain-word warnings and plots, its progress
while a worker runs it, and the earlier diagnoses. Thin: the services queue, the selectors
read; nothing is simulated in the request."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.accounts.access import AuthenticatedHttpRequest, signed_in_user
from apps.accounts.selectors import roles_for
from apps.analysis.diagnosis.engine import DiagnosisUnavailable, base_raw, version_world
from apps.analysis.diagnosis.forms import WORLD_PREFIX, DiagnosisForm
from apps.analysis.diagnosis.plots import diagnosis_plot_specs, diagnosis_svg
from apps.analysis.diagnosis.selectors import (
    diagnosis_document,
    latest_diagnosis,
    version_diagnoses,
)
from apps.analysis.diagnosis.services import design_diagnosis_cancel, design_diagnosis_request
from apps.analysis.models import DesignDiagnosis
from apps.analysis.pipelines.base import PlanInputError
from apps.core.access import first_or_404
from apps.core.forms import add_service_errors
from apps.core.views import NO_SUCH_PLOT, polled_status, svg_plot
from apps.protocols.access import EDIT_ROLES, READ_ROLES, get_version_by_label_for
from apps.protocols.models import ProtocolVersion


def _version(request: AuthenticatedHttpRequest, code: str, label: str, roles: Any) -> Any:
    return get_version_by_label_for(
        user=signed_in_user(request), code=code, label=label, roles=roles
    )


def _diagnosis(version: ProtocolVersion, number: int) -> DesignDiagnosis:
    return first_or_404(
        version_diagnoses(version).filter(number=number), "No such design diagnosis."
    )


def diagnosis_context(diagnosis: DesignDiagnosis | None) -> dict[str, Any]:
    """What the diagnosis templates show of ``diagnosis``: its document, its table rows and
    its plots."""
    document = diagnosis_document(diagnosis) if diagnosis is not None else None
    if document is None:
        return {"diagnosis": diagnosis, "document": None}
    names = [name for name, _ in document["diagnosands"]]
    point = document["points"][0]
    rows = [
        {"estimate": estimate, "cells": [values[n] for n in names]}
        for estimate, values in point["estimates"].items()
    ]
    stages = [
        {
            "where": where or "Decision table",
            "cells": [
                {"what": key.removeprefix("finding:"), **share} for key, share in shares.items()
            ],
        }
        for where, shares in point["stages"].items()
    ]
    curve = [
        {
            "size": p["size"],
            "administrations": p["administrations"],
            "power": {n: v["power"] for n, v in p["estimates"].items()},
        }
        for p in document["points"]
    ]
    return {
        "diagnosis": diagnosis,
        "document": document,
        "columns": [title for _, title in document["diagnosands"]],
        "rows": rows,
        "stages": stages,
        "curve": curve if document.get("size") else [],
        "plots": diagnosis_plot_specs(document),
    }


@login_required
@require_http_methods(["GET", "POST"])
def diagnosis_page(request: AuthenticatedHttpRequest, code: str, label: str) -> HttpResponse:
    """The draft's design diagnosis: the form (PI and editors of a draft) and the latest."""
    version = _version(request, code, label, READ_ROLES if request.method == "GET" else EDIT_ROLES)
    roles = roles_for(user=request.user, protocol_id=version.protocol_id)
    can_run = bool(roles & EDIT_ROLES) and version.is_draft
    unavailable = ""
    form = None
    try:
        pipeline, model = version_world(version)
        raw = base_raw(version, pipeline)
        schema = model.schema(raw)
    except (DiagnosisUnavailable, PlanInputError) as error:
        unavailable = str(error)
    else:
        current = {s.name: s.current(raw) for s in model.sizes}
        last = version_diagnoses(version).first()
        initial = {}
        if last is not None:
            initial = {WORLD_PREFIX + k: v for k, v in last.world.items()}
            initial.update(sims=last.sims, seed=last.seed, size=last.size)
            initial["size_values"] = ", ".join(str(v) for v in last.size_values)
        form = DiagnosisForm(
            request.POST or None,
            initial=initial,
            schema=schema,
            sizes=model.sizes,
            current=current,
        )
    if request.method == "POST" and form is not None and can_run and form.is_valid():
        try:
            diagnosis = design_diagnosis_request(
                version=version,
                user=signed_in_user(request),
                world=form.world(),
                sims=form.cleaned_data["sims"],
                seed=form.cleaned_data["seed"],
                size=form.cleaned_data["size"] or "",
                size_values=form.cleaned_data["size_values"],
            )
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, f"Design diagnosis {diagnosis.number} is queued.")
            return redirect("analysis:diagnosis", code=code, label=label)
    running = version_diagnoses(version).filter(state__in=("queued", "running")).first()
    return render(
        request,
        "analysis/diagnosis.html",
        {
            "version": version,
            "protocol": version.protocol,
            "form": form,
            "can_run": can_run,
            "unavailable": unavailable,
            "running": running,
            "diagnoses": version_diagnoses(version)[:20],
            **diagnosis_context(latest_diagnosis(version)),
        },
    )


@login_required
@require_GET
def diagnosis_status(
    request: AuthenticatedHttpRequest, code: str, label: str, number: int
) -> HttpResponse:
    """The progress fragment the page polls (htmx); once finished, the page reloads."""
    version = _version(request, code, label, READ_ROLES)
    diagnosis = _diagnosis(version, number)
    return polled_status(
        request,
        "analysis/_diagnosis_status.html",
        {"version": version, "running": diagnosis},
        finished=diagnosis.is_finished,
    )


@login_required
@require_POST
def diagnosis_cancel(
    request: AuthenticatedHttpRequest, code: str, label: str, number: int
) -> HttpResponse:
    version = _version(request, code, label, EDIT_ROLES)
    design_diagnosis_cancel(diagnosis=_diagnosis(version, number))
    messages.info(request, f"Design diagnosis {number} is cancelled.")
    return redirect("analysis:diagnosis", code=code, label=label)


@login_required
@require_GET
def diagnosis_plot(
    request: AuthenticatedHttpRequest, code: str, label: str, number: int, index: int
) -> HttpResponse:
    version = _version(request, code, label, READ_ROLES)
    document = diagnosis_document(_diagnosis(version, number))
    if document is None:
        raise Http404(NO_SUCH_PLOT)
    return svg_plot(request, lambda width: diagnosis_svg(document, index, width))
