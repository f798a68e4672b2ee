"""The auditor's pages: each protocol's log, its exports, manual deviations, the outcome seal."""

import itertools
from collections.abc import Iterable
from pathlib import Path

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    JsonResponse,
    StreamingHttpResponse,
)
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods

from apps.accounts.access import AuthenticatedHttpRequest
from apps.accounts.models import Role
from apps.accounts.selectors import roles_for
from apps.core.forms import service_on_post
from apps.core.views import attachment, named
from apps.deviations import chain
from apps.deviations.checkpoints import (
    checkpoint_bytes,
    checkpoints_checked,
    latest_checkpoint,
    public_keys,
    signer_key_id,
)
from apps.deviations.exports import csv_lines, jsonl_lines
from apps.deviations.forms import DeviationForm, LogFilterForm, UnsealForm
from apps.deviations.models import LogEntry
from apps.deviations.refs import resolved_refs
from apps.deviations.selectors import (
    DEVIATION_WRITER_ROLES,
    LOG_READER_ROLES,
    chain_verify,
    entry_dicts,
    log_actors,
    log_entries,
    log_readable_protocols,
    pending_count,
    protocol_outcomes_visible,
    unsealing_for,
    versions_with_seal,
)
from apps.deviations.services import deviation_record, outcome_unseal
from apps.protocols.access import get_protocol_for, get_version_for
from apps.protocols.refs import version_ref

ENTRIES_PER_PAGE = 100


@login_required
@require_GET
def log_index(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The protocols whose deviation log the user may read (auditors, PIs and editors)."""
    return render(
        request,
        "deviations/log_index.html",
        {"protocols": log_readable_protocols(user=request.user)},
    )


@login_required
@require_GET
def protocol_log(request: AuthenticatedHttpRequest, code: str) -> HttpResponse:
    """One protocol's log: the chain's state, the outcome seal, filters and the entries."""
    protocol = get_protocol_for(user=request.user, pk=code, roles=LOG_READER_ROLES)
    roles = roles_for(user=request.user, protocol_id=protocol.pk)
    form = LogFilterForm(request.GET or None, actors=log_actors(protocol_id=protocol.pk))
    filters = form.cleaned_data if form.is_valid() else {}
    entries = log_entries(protocol_id=protocol.pk, filters=filters)
    page = Paginator(entries, ENTRIES_PER_PAGE).get_page(request.GET.get("page"))
    valid, invalid = checkpoints_checked(protocol)
    checkpoint = max(valid, key=lambda c: (c.seq, c.pk), default=None)
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "deviations/log.html",
        {
            "protocol": protocol,
            "report": chain_verify(protocol=protocol, checkpoints=[c.document for c in valid]),
            "checkpoint": checkpoint,
            "checkpoint_key": signer_key_id(checkpoint) if checkpoint else None,
            "skipped_checkpoints": invalid,
            "checked_at": timezone.now(),
            "form": form,
            "filtered": any(filters.values()),
            "page": page,
            "rows": [(entry, resolved_refs(entry.refs)) for entry in page],
            "query": query.urlencode(),
            "versions": versions_with_seal(protocol_id=protocol.pk),
            "can_record": bool(roles & DEVIATION_WRITER_ROLES),
            "can_unseal": Role.PI in roles,
            "pending": pending_count(protocol_id=protocol.pk),
        },
    )


def _attachment(lines: Iterable[str], *, content_type: str, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(
        (line.encode("utf-8") for line in lines), content_type=content_type
    )
    return named(response, filename)


@login_required
@require_GET
def log_export_jsonl(request: AuthenticatedHttpRequest, code: str) -> StreamingHttpResponse:
    """The whole chain as JSONL, one canonical JSON entry per line: the offline verifier's input.

    The first line is the latest signed checkpoint, when there is one (the verifier checks that
    the entries extend it)."""
    protocol = get_protocol_for(user=request.user, pk=code, roles=LOG_READER_ROLES)
    latest = latest_checkpoint(protocol=protocol)
    head = [checkpoint_bytes(latest.document).decode()] if latest else []
    return _attachment(
        itertools.chain(head, jsonl_lines(entry_dicts(protocol=protocol))),
        content_type="application/x-ndjson; charset=utf-8",
        filename=f"{protocol.code}-deviation-log.jsonl",
    )


@login_required
@require_GET
def log_export_csv(request: AuthenticatedHttpRequest, code: str) -> StreamingHttpResponse:
    """The whole chain as CSV with its hashes, for reading in a spreadsheet."""
    protocol = get_protocol_for(user=request.user, pk=code, roles=LOG_READER_ROLES)
    return _attachment(
        csv_lines(entry_dicts(protocol=protocol)),
        content_type="text/csv; charset=utf-8",
        filename=f"{protocol.code}-deviation-log.csv",
    )


@require_GET
def signing_key_view(request: HttpRequest) -> JsonResponse:
    """The public key(s) that sign log checkpoints, at a stable URL anyone may fetch."""
    return JsonResponse(public_keys())


@login_required
@require_GET
def checkpoint_download(request: AuthenticatedHttpRequest, code: str) -> HttpResponse:
    """The protocol's latest signed checkpoint, as a file an auditor keeps."""
    protocol = get_protocol_for(user=request.user, pk=code, roles=LOG_READER_ROLES)
    latest = latest_checkpoint(protocol=protocol)
    if latest is None:
        raise Http404("No checkpoint of this log has been signed yet.")
    name = f"{protocol.code}-checkpoint-{latest.seq}.json"
    return attachment(
        checkpoint_bytes(latest.document), content_type="application/json", filename=name
    )


@login_required
@require_GET
def offline_verifier(request: AuthenticatedHttpRequest) -> FileResponse:
    """The standalone verifier (standard-library Python) that checks a JSONL export offline."""
    return FileResponse(
        open(Path(chain.__file__), "rb"),  # FileResponse closes it
        as_attachment=True,
        filename="verify_log.py",
        content_type="text/x-python; charset=utf-8",
    )


@login_required
@require_http_methods(["GET", "POST"])
def deviation_new(request: AuthenticatedHttpRequest, code: str) -> HttpResponse:
    """Record a deviation by hand (PI or editor): date, rationale; "outcomes seen" from the seal."""
    protocol = get_protocol_for(user=request.user, pk=code, roles=DEVIATION_WRITER_ROLES)
    versions = versions_with_seal(protocol_id=protocol.pk)
    form = DeviationForm(request.POST or None, versions=versions)

    def record() -> LogEntry:
        data = form.cleaned_data
        chosen = next((v for v in versions if v.pk == data["version"]), None)
        return deviation_record(
            protocol=protocol,
            user=request.user,
            kind=data["kind"],
            rationale=data["rationale"],
            occurred_on=data["occurred_on"],
            refs=[version_ref(chosen)] if chosen else [],
        )

    entry = service_on_post(request, form, record)
    if entry is not None:
        messages.success(request, f"Deviation recorded as entry {entry.seq}.")
        return redirect(
            reverse("deviations:log", kwargs={"code": protocol.code}) + f"#entry-{entry.seq}"
        )
    return render(
        request,
        "deviations/deviation_new.html",
        {
            "protocol": protocol,
            "form": form,
            "outcomes_seen": protocol_outcomes_visible(protocol_id=protocol.pk),
            # versions_with_seal sets .seal on each version (an attribute, not a field).
            "unsealed_versions": [v for v in versions if v.seal],  # type: ignore[attr-defined]
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def version_unseal(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """Unseal a frozen version's outcomes, with the protocol code typed as confirmation (PI)."""
    version = get_version_for(user=request.user, pk=pk, roles={Role.PI})
    protocol = version.protocol
    form = UnsealForm(request.POST or None)
    unsealing = service_on_post(
        request,
        form,
        lambda: outcome_unseal(
            version=version,
            user=request.user,
            confirmation=form.cleaned_data["confirmation"],
        ),
    )
    if unsealing is not None:
        messages.success(
            request, f"Outcomes of {protocol.code} v{version.label} are unsealed; it is logged."
        )
        # Unsealing is done to read the result: land on the latest report (issue #37 §6).
        return redirect("analysis:latest", code=protocol.code, label=version.label)
    return render(
        request,
        "deviations/unseal.html",
        {
            "protocol": protocol,
            "version": version,
            "unsealing": unsealing_for(version),
            "form": form,
        },
    )
