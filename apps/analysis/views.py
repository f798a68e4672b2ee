"""Pages of analysis runs: the version's runs, a run's report, its live status, downloads, plots.

PI and auditors read; the PI starts runs. While a version's outcomes are sealed, a succeeded
run shows that a result exists and its hashes, and nothing computed from the data: no
estimates, plots or downloads (403), until the PI unseals the version's outcomes. A run
without a result (queued, running, failed) answers its downloads and plots with 409, as the API
does.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from apps.accounts.access import AuthenticatedHttpRequest, signed_in_user
from apps.accounts.models import Role
from apps.accounts.selectors import roles_for
from apps.analysis.access import READ_ROLES, START_ROLES, get_analysis_version_for, get_run_for
from apps.analysis.computability import data_shortfall
from apps.analysis.forms import RunRequestForm
from apps.analysis.headline import report_headline
from apps.analysis.models import AnalysisRun, RunState
from apps.analysis.pipelines import ReportTemplate, get_pipeline, shared_reports
from apps.analysis.plots import plot_specs, render_svg
from apps.analysis.selectors import (
    result_bytes,
    result_document,
    result_filename,
    run_is_sealed,
    runs_of,
    tidy_csv,
    tidy_filename,
)
from apps.analysis.services import analysis_run_request
from apps.core.errors import StateConflict
from apps.core.forms import add_service_errors
from apps.core.views import attachment, polled_status, svg_plot
from apps.protocols.models import ProtocolVersion
from apps.protocols.plans import version_pipeline


def unseal_url(version: ProtocolVersion) -> str:
    """The page where the PI unseals the version's outcomes (the deviations app's)."""
    return reverse("deviations:unseal", args=[version.protocol.code, version.label])


def _is_pi(request: AuthenticatedHttpRequest, version: ProtocolVersion) -> bool:
    return Role.PI in roles_for(user=request.user, protocol_id=version.protocol_id)


@login_required
@require_http_methods(["GET", "POST"])
def run_list(request: AuthenticatedHttpRequest, code: str, label: str) -> HttpResponse:
    """The version's analysis runs; the PI's form to start one."""
    roles = READ_ROLES if request.method == "GET" else START_ROLES
    version = get_analysis_version_for(
        user=signed_in_user(request), code=code, label=label, roles=roles
    )
    is_pi = _is_pi(request, version)
    default_kind = version_pipeline(version)
    form = RunRequestForm(request.POST or None, default_kind=default_kind)
    shortfall = None
    if request.method == "POST" and form.is_valid() and not form.cleaned_data["below_minimum"]:
        # Below the plan's minimum the PI confirms first, told what is missing (issue #37 §6).
        shortfall = data_shortfall(version=version)
        if not shortfall.missing:
            shortfall = None
    if request.method == "POST" and form.is_valid() and shortfall is None:
        try:
            run = analysis_run_request(
                version=version,
                user=signed_in_user(request),
                kind=form.cleaned_data["kind"],
                reason=form.cleaned_data["reason"],
            )
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, f"Analysis run {run.number} is queued.")
            return redirect("analysis:report", code=code, label=label, number=run.number)
    return render(
        request,
        "analysis/run_list.html",
        {
            "version": version,
            "runs": runs_of(version=version),
            "form": form,
            "is_pi": is_pi,
            "can_start": is_pi and version.state == "frozen" and default_kind is not None,
            "pipeline": default_kind,
            "shortfall": shortfall,
        },
    )


def _report_context(request: AuthenticatedHttpRequest, run: AnalysisRun) -> dict[str, Any]:
    sealed = run_is_sealed(run)
    context: dict[str, Any] = {
        "run": run,
        "version": run.version,
        "sealed": sealed,
        "is_pi": _is_pi(request, run.version),
        "unseal_url": unseal_url(run.version),
        "finished": run.is_finished,
    }
    if run.state == RunState.SUCCEEDED and not sealed:
        document = result_document(run)
        context["document"] = document
        context["estimates"] = document["estimates"]
        context["plots"] = plot_specs(document)
        context.update(report_sections_context(document))
        context["headline"] = report_headline(document, run.version)
    return context


def report_sections_context(document: dict[str, Any]) -> dict[str, Any]:
    """The kind's own report sections for a result ``document`` (``Pipeline.report``): the
    context's ``report_sections`` (template names, included in order by the shared report page
    and by the registry's public run page), with what each section adds to the context."""
    sections = (*_report_of(document["kind"]), *(part.report for part in shared_reports()))
    context: dict[str, Any] = {"report_sections": [section.template for section in sections]}
    for section in sections:
        if section.context is not None:
            context.update(section.context(document))
    return context


def _report_of(kind: str) -> tuple[ReportTemplate, ...]:
    try:
        return get_pipeline(kind).report
    except KeyError:  # a kind since unregistered: the shared parts of the report only
        return ()


@login_required
@require_GET
def run_report(
    request: AuthenticatedHttpRequest, code: str, label: str, number: int
) -> HttpResponse:
    """One run: live status while it runs; when it succeeded, its report (unless sealed)."""
    run = get_run_for(user=signed_in_user(request), code=code, label=label, number=number)
    return render(request, "analysis/run_report.html", _report_context(request, run))


@login_required
@require_GET
def latest_report(request: AuthenticatedHttpRequest, code: str, label: str) -> HttpResponse:
    """The version's newest succeeded run's report (where unsealing lands), else its runs."""
    version = get_analysis_version_for(
        user=signed_in_user(request), code=code, label=label, roles=READ_ROLES
    )
    run = runs_of(version=version).filter(state=RunState.SUCCEEDED).first()
    if run is None:
        return redirect("analysis:runs", code=code, label=label)
    return redirect("analysis:report", code=code, label=label, number=run.number)


@login_required
@require_GET
def run_status(
    request: AuthenticatedHttpRequest, code: str, label: str, number: int
) -> HttpResponse:
    """The status fragment the report page polls (htmx). When the run has finished, asks the
    browser to reload the page so the report (or the failure) shows in full."""
    run = get_run_for(user=signed_in_user(request), code=code, label=label, number=number)
    return polled_status(
        request,
        "analysis/_run_status.html",
        _report_context(request, run),
        finished=run.is_finished,
    )


def _unsealed_result_run(
    request: AuthenticatedHttpRequest, code: str, label: str, number: int
) -> AnalysisRun:
    run = get_run_for(user=request.user, code=code, label=label, number=number)
    if run.state != RunState.SUCCEEDED:
        raise StateConflict(f"Analysis run {run.number} has no result ({run.state}).")
    if run_is_sealed(run):
        raise PermissionDenied("The version's outcomes are sealed until the PI unseals them.")
    return run


@login_required
@require_GET
def result_download(
    request: AuthenticatedHttpRequest, code: str, label: str, number: int
) -> HttpResponse:
    """The result document: the blob's exact bytes."""
    run = _unsealed_result_run(request, code, label, number)
    name = result_filename(code, label, run)
    return attachment(result_bytes(run), content_type="application/json", filename=name)


@login_required
@require_GET
def tidy_download(
    request: AuthenticatedHttpRequest, code: str, label: str, number: int
) -> HttpResponse:
    """The tidy data (one row per analysed response) as CSV, from the run's stored inputs."""
    run = _unsealed_result_run(request, code, label, number)
    name = tidy_filename(code, label, run)
    return attachment(tidy_csv(run), content_type="text/csv; charset=utf-8", filename=name)


@login_required
@require_GET
def plot_svg(
    request: AuthenticatedHttpRequest, code: str, label: str, number: int, index: int
) -> HttpResponse:
    """Plot ``index`` of the run's report as SVG, drawn from the result document; ``?w=``
    (CSS px) draws it for that width (``render_svg``), as the report's narrow-screen source
    asks."""
    run = _unsealed_result_run(request, code, label, number)
    return svg_plot(request, lambda width: render_svg(result_document(run), index, width))
