"""The public registry's pages (no sign-in) and the PI's publish page.

Public pages: the index ``/r/`` (search, pages, Atom feed), a protocol ``/r/<code>/``, a version
``/r/<code>/<label>/`` (its frozen document, hash, freeze, seal, amendments, citation and "how to
check this"), its published runs, the public log and the offline verifier's files. A view-only
link ``/r/_view/<token>/`` opens one version's page read-only. Everything unpublished answers
404 exactly as unknown (``apps.registry.access``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.syndication.views import Feed
from django.core.exceptions import ValidationError
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
from django.utils.feedgenerator import Atom1Feed
from django.views.decorators.http import require_GET, require_POST

from apps.accounts.access import AuthenticatedHttpRequest
from apps.analysis.access import get_run_for
from apps.analysis.headline import report_headline
from apps.analysis.selectors import (
    result_bytes,
    result_document,
    result_filename,
    tidy_csv,
    tidy_filename,
)
from apps.analysis.views import report_sections_context
from apps.core.access import first_or_404
from apps.core.views import attachment, named
from apps.deviations import chain
from apps.deviations.checkpoints import public_keys
from apps.deviations.exports import jsonl_lines
from apps.deviations.selectors import versions_with_seal
from apps.protocols.access import PI_ROLES
from apps.protocols.models import Blob, Protocol, ProtocolVersion, VersionState
from apps.protocols.plans import plan_template
from apps.registry import access, citation, selectors, services
from apps.registry.forms import IndexSearchForm, PublishForm, ViewLinkForm
from apps.registry.models import Publication, ViewLink
from apps.registry.rendering import WITHHELD, document_for_reading

IMMUTABLE_CACHE = "public, max-age=31536000, immutable"
SHORT_CACHE = "public, max-age=300"


# -- shared pieces --------------------------------------------------------------------------


def citable(request: HttpRequest, version: ProtocolVersion, *, anonymised: bool = False):
    """The ``citation.Citable`` of a public version (absolute URLs from ``request``)."""
    publication: Publication = version.publication
    code = version.protocol.code
    predecessor = version.supersedes
    supersedes_url = None
    earlier = getattr(predecessor, "publication", None) if predecessor is not None else None
    if predecessor is not None and earlier is not None and earlier.is_public:
        supersedes_url = request.build_absolute_uri(
            reverse("registry:version", args=[code, predecessor.label])
        )
    return citation.Citable(
        code=code,
        title=version.protocol.title,
        label=version.label,
        sha256=version.sha256,
        authors="" if anonymised else publication.authors,
        url=request.build_absolute_uri(reverse("registry:version", args=[code, version.label])),
        public_since=publication.public_since or publication.published_at,
        frozen_at=version.frozen_at or publication.published_at,
        supersedes_url=supersedes_url,
    )


def _document(version: ProtocolVersion) -> dict[str, Any] | None:
    blob = Blob.objects.filter(sha256=version.sha256).only("content").first()
    return None if blob is None else document_for_reading(bytes(blob.content))


def _version_context(
    request: HttpRequest, version: ProtocolVersion, *, link: ViewLink | None = None
) -> dict[str, Any]:
    protocol = version.protocol
    anonymised = bool(link and link.anonymised)
    withdrawn = getattr(version, "withdrawal", None)
    publication = getattr(version, "publication", None)
    public = bool(publication and publication.is_public)
    context: dict[str, Any] = {
        "protocol": protocol,
        "version": version,
        "publication": publication if public else None,
        # The names on the page: none through an anonymised link; the PIs as they chose to be
        # named once the version is published.
        "authors": "" if anonymised or publication is None else publication.authors,
        "link": link,
        "anonymised": anonymised,
        "withdrawal": withdrawn,
        "unsealing": selectors.first_unsealing(protocol=protocol),
        "version_unsealing": getattr(version, "unsealing", None),
        "withheld": WITHHELD,
        "short": version.sha256[:16],
        "blob_url": reverse("protocols-api:blob", args=[version.sha256]),
        "short_url": reverse("protocols-api:blob", args=[version.sha256[:16]]),
    }
    if withdrawn is None:
        context["document"] = _document(version)
    if link is None:
        context["amendments"] = selectors.amendments(protocol=protocol)
        context["superseded_by"] = selectors.is_superseded_publicly(version)
        context["runs"] = selectors.published_runs(version=version)
        item = citable(request, version)
        context["citation"] = citation.reference(item)
        # Inside <script>: escape what could close the element (as Django's json_script does).
        context["json_ld"] = (
            json.dumps(citation.json_ld(item), sort_keys=True)
            .replace("<", "\\u003c")
            .replace(">", "\\u003e")
            .replace("&", "\\u0026")
        )
        context["has_checkpoint"] = bool(selectors.public_checkpoints(protocol=protocol))
    return context


# -- the index and its feed -------------------------------------------------------------------


@require_GET
def index(request: HttpRequest) -> HttpResponse:
    """Every public protocol, newest first; searchable and paged."""
    form = IndexSearchForm(request.GET or None)
    status = 200
    query = selectors.IndexQuery()
    if form.is_bound:
        if form.is_valid():
            query = form.query()
        else:
            status = 400
    page = Paginator(selectors.registry_index(query=query), selectors.INDEX_PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    params = request.GET.copy()
    params.pop("page", None)
    return render(
        request,
        "registry/index.html",
        {"form": form, "page": page, "query": params.urlencode()},
        status=status,
    )


class RegistryFeed(Feed):
    """The latest public versions as an Atom feed."""

    feed_type = Atom1Feed
    title = "Preregistry: published preregistrations"
    subtitle = "Frozen protocol versions made public, newest first."

    def link(self) -> str:
        return reverse("registry:index")

    def items(self) -> list[Publication]:
        return selectors.recent_publications()

    def item_title(self, item: Publication) -> str:
        version = item.version
        tombstone = " (withdrawn)" if hasattr(version, "withdrawal") else ""
        return f"{version.protocol.code} v{version.label}: {version.protocol.title}{tombstone}"

    def item_description(self, item: Publication) -> str:
        return f"SHA-256 {item.version.sha256}"

    def item_link(self, item: Publication) -> str:
        return reverse("registry:version", args=[item.version.protocol.code, item.version.label])

    def item_pubdate(self, item: Publication) -> datetime | None:
        return item.public_since

    def item_author_name(self, item: Publication) -> str:
        return item.authors


# -- protocol and version pages ---------------------------------------------------------------


@require_GET
def protocol_page(request: HttpRequest, code: str) -> HttpResponse:
    """A public protocol: title, authors, every public version with its state and hash."""
    protocol = access.get_public_protocol(code=code)
    versions = selectors.protocol_public_versions(protocol=protocol)
    rows = [(v, selectors.is_superseded_publicly(v)) for v in versions]
    return render(
        request,
        "registry/protocol.html",
        {
            "protocol": protocol,
            "rows": rows,
            "authors": selectors.protocol_authors(protocol=protocol),
            "plan": plan_template(protocol.template),
        },
    )


@require_GET
def version_page(request: HttpRequest, code: str, label: str) -> HttpResponse:
    """A public version: its frozen document for reading (or its tombstone), and its proofs."""
    version = access.get_public_version(code=code, label=label)
    return render(request, "registry/version.html", _version_context(request, version))


def _document_response(version: ProtocolVersion) -> HttpResponse:
    blob = first_or_404(Blob.objects.filter(sha256=version.sha256), access.NOT_FOUND)
    name = f"{version.protocol.code}-v{version.label}.json"
    response = attachment(bytes(blob.content), content_type="application/json", filename=name)
    response["ETag"] = f'"{blob.sha256}"'
    response["Cache-Control"] = IMMUTABLE_CACHE
    return response


@require_GET
def version_document(request: HttpRequest, code: str, label: str) -> HttpResponse:
    """The frozen document's exact bytes (what its SHA-256 is taken over); 404 for a tombstone."""
    version = access.get_public_version(code=code, label=label)
    if hasattr(version, "withdrawal"):
        raise Http404(access.NOT_FOUND)
    return _document_response(version)


_CITATION_FORMATS = {
    "cite.bib": ("application/x-bibtex; charset=utf-8", lambda item: citation.bibtex(item)),
    "cite.csl.json": (
        "application/vnd.citationstyles.csl+json",
        lambda item: json.dumps(citation.csl_json(item), indent=2, ensure_ascii=False),
    ),
    "datacite.json": (
        "application/vnd.datacite.datacite+json",
        lambda item: json.dumps(citation.datacite_metadata(item), indent=2, ensure_ascii=False),
    ),
}


@require_GET
def version_citation(request: HttpRequest, code: str, label: str, fmt: str) -> HttpResponse:
    """The citation as BibTeX, CSL-JSON or DataCite JSON."""
    version = access.get_public_version(code=code, label=label)
    if fmt not in _CITATION_FORMATS:
        raise Http404(access.NOT_FOUND)
    content_type, render_it = _CITATION_FORMATS[fmt]
    response = HttpResponse(render_it(citable(request, version)), content_type=content_type)
    return named(response, f"{code}-v{label}-{fmt}", inline=True)


# -- view-only links --------------------------------------------------------------------------


@require_GET
def view_link_page(request: HttpRequest, token: str) -> HttpResponse:
    """The one version a view-only link opens, read-only (anonymised when the link says so).
    The link's first opening is logged."""
    link = access.get_view_link(token=token)
    services.view_link_first_use(link=link)
    response = render(
        request, "registry/version.html", _version_context(request, link.version, link=link)
    )
    # A reviewer's link must not leak through Referer to the pages or sites it links to.
    response["Referrer-Policy"] = "no-referrer"
    response["X-Robots-Tag"] = "noindex"
    response["Cache-Control"] = "private, no-store"
    return response


@require_GET
def view_link_document(request: HttpRequest, token: str) -> HttpResponse:
    """The linked version's frozen document, for the reviewer to check its hash."""
    link = access.get_view_link(token=token)
    if hasattr(link.version, "withdrawal"):
        raise Http404(access.NOT_FOUND)
    response = _document_response(link.version)
    response["Cache-Control"] = "private, no-store"
    response["Referrer-Policy"] = "no-referrer"
    return response


# -- the public log and the offline verifier --------------------------------------------------


@require_GET
def log_download(request: HttpRequest, code: str) -> StreamingHttpResponse:
    """The protocol's whole log as JSONL (the offline verifiers' input), latest checkpoint
    first."""
    protocol = access.get_public_protocol(code=code)
    checkpoints = selectors.public_checkpoints(protocol=protocol)
    head = [chain.canonical_json(checkpoints[-1]).decode() + "\n"] if checkpoints else []
    lines = itertools.chain(head, jsonl_lines(selectors.public_log_lines(protocol=protocol)))
    # Streamed: memory stays flat however long the log is.
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson; charset=utf-8")
    return named(response, f"{protocol.code}-log.jsonl")


@require_GET
def checkpoints_download(request: HttpRequest, code: str) -> JsonResponse:
    """Every signed checkpoint of the protocol's log (JSON list), oldest first."""
    protocol = access.get_public_protocol(code=code)
    response = JsonResponse(selectors.public_checkpoints(protocol=protocol), safe=False)
    return named(response, f"{protocol.code}-checkpoints.json")


@require_GET
def signing_key(request: HttpRequest) -> JsonResponse:
    """The public key(s) that sign log checkpoints."""
    return named(JsonResponse(public_keys()), "signing-key.json")


_VERIFIERS = {
    "verify_registration.py": Path(__file__).with_name("verify.py"),
    "verify_log.py": Path(chain.__file__),
}


@require_GET
def verifier_file(request: HttpRequest, name: str) -> FileResponse:
    """The offline verifiers: ``verify_registration.py`` and the log's ``verify_log.py``."""
    if name not in _VERIFIERS:
        raise Http404(access.NOT_FOUND)
    return FileResponse(
        open(_VERIFIERS[name], "rb"),  # FileResponse closes it
        as_attachment=True,
        filename=name,
        content_type="text/x-python; charset=utf-8",
    )


# -- published runs ---------------------------------------------------------------------------


@require_GET
def run_page(request: HttpRequest, code: str, label: str, number: int) -> HttpResponse:
    """A published run: its hashes, denominators, report and the log up to it."""
    run = access.get_public_run(code=code, label=label, number=number)
    document = result_document(run)
    through = selectors.run_log_entry_seq(run=run)
    estimates = document.get("estimates") or {}
    return render(
        request,
        "registry/run.html",
        {
            # The analysis app's own report sections, as its report page shows them (plots
            # are left out: they are drawn by a signed-in route; the result JSON holds them).
            "document": document,
            "estimates": estimates,
            "headline": report_headline(document, run.version),
            "plots": [],
            **report_sections_context(document),
            "run": run,
            "version": run.version,
            "protocol": run.version.protocol,
            "result": document,
            "result_text": json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False),
            "denominators": _denominators(document),
            "entries": selectors.public_log_entries_through(
                protocol=run.version.protocol, seq=through
            ),
            "through": through,
        },
    )


def _denominators(document: dict[str, Any]) -> list[tuple[str, Any]]:
    """Every ``n``/``N``-like count the result document holds, by its path (seed 002's
    "publish exact denominators"), read generically from the document."""
    found: list[tuple[str, Any]] = []

    def walk(value: Any, path: str) -> None:
        if len(found) >= 500:
            return
        if isinstance(value, dict):
            for key, item in value.items():
                where = f"{path}.{key}" if path else str(key)
                if (
                    key in {"n", "N", "denominator", "n_total", "n_responses", "count", "total"}
                    or key.startswith(("n_", "N_"))
                ) and isinstance(item, int):
                    found.append((where, item))
                else:
                    walk(item, where)
        elif isinstance(value, list):
            for position, item in enumerate(value):
                walk(item, f"{path}[{position}]")

    walk(document, "")
    return found


def _run_download(run, content: bytes | str, content_type: str, name: str) -> HttpResponse:
    response = attachment(content, content_type=content_type, filename=name)
    response["ETag"] = f'"{run.result_id}"'
    response["Cache-Control"] = IMMUTABLE_CACHE
    return response


@require_GET
def run_result(request: HttpRequest, code: str, label: str, number: int) -> HttpResponse:
    """The published run's result document, byte for byte."""
    run = access.get_public_run(code=code, label=label, number=number)
    name = result_filename(code, label, run)
    return _run_download(run, result_bytes(run), "application/json", name)


@require_GET
def run_tidy(request: HttpRequest, code: str, label: str, number: int) -> HttpResponse:
    """The published run's tidy data as CSV."""
    run = access.get_public_run(code=code, label=label, number=number)
    name = tidy_filename(code, label, run)
    return _run_download(run, tidy_csv(run), "text/csv; charset=utf-8", name)


# -- the PI's publish page --------------------------------------------------------------------


def _publish_context(request: AuthenticatedHttpRequest, protocol: Protocol) -> dict[str, Any]:
    versions = [
        v for v in versions_with_seal(protocol_id=protocol.pk) if v.state == VersionState.FROZEN
    ]
    publications = {p.version_id: p for p in Publication.objects.filter(version__protocol=protocol)}
    links = selectors.view_links_of(protocol=protocol)
    from apps.analysis.models import AnalysisRun, RunState

    runs = (
        AnalysisRun.objects.filter(version__protocol=protocol, state=RunState.SUCCEEDED)
        .select_related("version", "publication")
        .order_by("version__frozen_at", "number")
    )
    rows = [
        {
            "version": v,
            "publication": publications.get(v.pk),
            "links": [link for link in links if link.version_id == v.pk],
            "runs": [r for r in runs if r.version_id == v.pk],
        }
        for v in versions
    ]
    return {
        "protocol": protocol,
        "rows": rows,
        "publish_form": PublishForm(),
        "link_form": ViewLinkForm(),
        "today": datetime.now(UTC).date(),
        "limit": services.embargo_limit(services.today_utc()),
        "new_link": request.session.pop("registry_new_link", None),
    }


@login_required
@require_GET
def publish_page(request: AuthenticatedHttpRequest, code: str) -> HttpResponse:
    """The PI's page: publish versions (now or under embargo), end embargoes, view-only links,
    publish analysis runs."""
    protocol = access.get_protocol_to_publish_for(user=request.user, code=code)
    return render(request, "registry/publish.html", _publish_context(request, protocol))


def _refused(
    request: AuthenticatedHttpRequest, protocol: Protocol, error: ValidationError
) -> HttpResponse:
    context = _publish_context(request, protocol)
    context["errors"] = error.messages
    return render(request, "registry/publish.html", context, status=400)


def _back(code: str) -> HttpResponse:
    return redirect("registry:publish", code=code)


def _acted(
    request: AuthenticatedHttpRequest,
    protocol: Protocol,
    code: str,
    act: Callable[[], object],
    done: str,
) -> HttpResponse:
    # The PI's actions on the publish page: a refusal shows the page again with its reasons
    # (400); success says ``done`` and goes back to it.
    try:
        act()
    except ValidationError as error:
        return _refused(request, protocol, error)
    messages.success(request, done)
    return _back(code)


@login_required
@require_POST
def publish_action(request: AuthenticatedHttpRequest, code: str, label: str) -> HttpResponse:
    version = access.get_version_to_publish_for(user=request.user, code=code, label=label)
    form = PublishForm(request.POST)
    if not form.is_valid():
        return _refused(request, version.protocol, ValidationError(form.errors.as_text()))
    return _acted(
        request,
        version.protocol,
        code,
        lambda: services.version_publish(
            version=version,
            user=request.user,
            embargo_until=form.cleaned_data["embargo_until"],
            authors=form.cleaned_data["authors"],
        ),
        f"Published v{version.label}.",
    )


@login_required
@require_POST
def embargo_end_action(request: AuthenticatedHttpRequest, code: str, label: str) -> HttpResponse:
    version = access.get_version_to_publish_for(user=request.user, code=code, label=label)
    publication = Publication.objects.filter(version=version).first()
    if publication is None:
        return _refused(
            request, version.protocol, ValidationError("This version is not published.")
        )
    return _acted(
        request,
        version.protocol,
        code,
        partial(services.embargo_end, publication=publication, user=request.user),
        f"v{version.label} is public from now on.",
    )


@login_required
@require_POST
def view_link_create_action(
    request: AuthenticatedHttpRequest, code: str, label: str
) -> HttpResponse:
    version = access.get_version_to_publish_for(user=request.user, code=code, label=label)
    form = ViewLinkForm(request.POST)
    if not form.is_valid():
        return _refused(request, version.protocol, ValidationError(form.errors.as_text()))
    try:
        link = services.view_link_create(
            version=version,
            user=request.user,
            anonymised=form.cleaned_data["anonymised"],
            note=form.cleaned_data["note"],
        )
    except ValidationError as error:
        return _refused(request, version.protocol, error)
    request.session["registry_new_link"] = request.build_absolute_uri(
        reverse("registry:view-link", args=[link.token])
    )
    return _back(code)


@login_required
@require_POST
def view_link_revoke_action(request: AuthenticatedHttpRequest, code: str, pk: int) -> HttpResponse:
    link = access.get_view_link_for(user=request.user, code=code, pk=pk)
    return _acted(
        request,
        link.version.protocol,
        code,
        partial(services.view_link_revoke, link=link, user=request.user),
        f"View-only link no. {link.pk} revoked.",
    )


@login_required
@require_POST
def run_publish_action(
    request: AuthenticatedHttpRequest, code: str, label: str, number: int
) -> HttpResponse:
    run = get_run_for(user=request.user, code=code, label=label, number=number, roles=PI_ROLES)
    return _acted(
        request,
        run.version.protocol,
        code,
        partial(services.run_publish, run=run, user=request.user),
        f"Analysis run {number} of v{label} published.",
    )
