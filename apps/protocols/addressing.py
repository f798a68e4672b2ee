"""One way to address a version: protocol code + version label, in pages and API alike.

Pages live under ``/protocols/<code>/v/<label>/…`` and the API under
``/api/v1/protocols/<code>/versions/<label>/…``. Views written before this took the version's
database id (``version_id`` or ``pk``); ``by_label`` lets such a view be routed by code and label
unchanged, and ``legacy_redirect`` answers the old ``/versions/<id>/…`` page routes (kept for one
release) with a redirect to the new address, after the same access check the page makes, so a
redirect never tells a reviewer or a stranger which protocol an id belongs to.
"""

from collections.abc import Callable
from functools import wraps
from typing import Any, cast

from django.contrib.auth.decorators import login_required
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponsePermanentRedirect,
    HttpResponseRedirect,
)
from django.urls import reverse

from apps.accounts.models import User
from apps.protocols.models import ProtocolVersion

PAGE_PREFIX = "protocols/<str:code>/v/<str:label>/"
API_PREFIX = "protocols/<str:code>/versions/<str:label>/"


def version_pk(*, code: str, label: str) -> int:
    """The database id of version ``label`` of protocol ``code``, or 0 (no version has it)
    when there is none: the wrapped view's own access check then answers 404, in its own
    format (a page, or JSON under /api/)."""
    pk = (
        ProtocolVersion.objects.filter(protocol__code=code, label=label)
        .values_list("pk", flat=True)
        .first()
    )
    return pk or 0


def by_label(
    view: Callable, *, kwarg: str = "version_id", rename: dict[str, str] | None = None
) -> Callable:
    """``view`` (taking the version's id as ``kwarg``) routed by ``code`` and ``label``.

    ``rename`` maps a route's own keyword to the view's (``{"scorer": "code"}``: a view whose
    ``code`` is a scorer's, since ``code`` in the route is the protocol's).

    ``functools.wraps`` carries the view's attributes over (a DRF view's ``cls`` and
    ``csrf_exempt``), so the API's schema and CSRF handling see the view itself.
    """

    @wraps(view)
    def routed(request: HttpRequest, *args, code: str, label: str, **kwargs) -> HttpResponse:
        for ours, theirs in (rename or {}).items():
            if ours in kwargs:
                kwargs[theirs] = kwargs.pop(ours)
        kwargs[kwarg] = version_pk(code=code, label=label)
        return view(request, *args, **kwargs)

    return routed


def legacy_redirect(
    name: str, *, kwarg: str = "version_id", rename: dict[str, str] | None = None
) -> Callable:
    """A view for an old ``/versions/<id>/…`` page route: redirects to the page ``name``
    addressed by code and label (302 for GET; 307 for a form's POST, which keeps its method
    and body). Anyone who may not read the version gets the 404/403 the page would give."""

    @login_required
    def redirect_view(request: HttpRequest, **kwargs) -> HttpResponse:
        # login_required above: the user is signed in.
        url = _moved_to(request, name, kwargs, kwarg=kwarg, rename=rename)
        if request.method in ("GET", "HEAD"):
            return HttpResponseRedirect(url)
        response = HttpResponse(status=307)
        response["Location"] = url
        return response

    return redirect_view


_API_METHODS = ("get", "post", "put", "patch", "delete")


def api_legacy_redirect(
    name: str, target: type, *, kwarg: str = "version_id", rename: dict[str, str] | None = None
) -> Callable:
    """A view for an old ``/api/v1/versions/<id>/…`` route: a 308 to the resource ``name``
    addressed by code and label (308 keeps the method and the body, RFC 9110 §15.4.9), after
    the access check the page redirects make (``legacy_redirect``), answered by DRF (token or
    session, JSON errors). It offers the methods ``target`` (the API view) has, each marked
    deprecated in the schema."""
    from drf_spectacular.utils import OpenApiResponse, extend_schema
    from rest_framework.views import APIView

    def moved(self: APIView, request: HttpRequest, **kwargs) -> HttpResponse:
        url = _moved_to(request, name, kwargs, kwarg=kwarg, rename=rename)
        return HttpResponsePermanentRedirect(url, preserve_request=True)  # 308

    schema = extend_schema(
        deprecated=True,
        request=None,
        responses={
            308: OpenApiResponse(
                description="Moved for good to the same resource addressed by the protocol's "
                "code and the version's label (/api/v1/protocols/{code}/versions/{label}/…)."
            )
        },
        summary="Deprecated: addressed by the version's database id",
    )
    methods = {m: schema(moved) for m in _API_METHODS if hasattr(target, m)}
    view = cast(type[APIView], type(f"{target.__name__}ById", (APIView,), methods))
    return view.as_view()


def version_links(version: ProtocolVersion) -> dict[str, str]:
    """Every address of ``version`` a client needs, as paths: its page and API resources.

    ``{"self", "page", "gate", "freeze", "rubric", "scoring", "scoring_open", "scorers",
    "machine_scores", "seal", "unseal", "log", "diff"}``; every one is built from the protocol
    code and the version label, never from a database id.
    """
    args = [version.protocol.code, version.label]
    api = {
        "self": "protocols-api:version",
        "gate": "protocols-api:gate",
        "freeze": "protocols-api:freeze",
        "amend": "protocols-api:amend",
        "rubric": "raters-api:rubric",
        "scoring": "raters-api:scoring",
        "scoring_open": "raters-api:scoring-open",
        "scoring_final": "raters-api:scoring-final",
        "scorers": "raters-api:scorers",
        "machine_scores": "raters-api:machine-scores",
        "seal": "deviations-api:seal",
        "unseal": "deviations-api:unseal",
    }
    links = {key: reverse(name, args=args) for key, name in api.items()}
    links["page"] = reverse("protocols:version", args=args)
    links["log"] = reverse("deviations-api:log", args=[version.protocol.code])
    return links


def _moved_to(
    request: HttpRequest,
    name: str,
    kwargs: dict[str, Any],
    *,
    kwarg: str,
    rename: dict[str, str] | None,
) -> str:
    """The URL of ``name`` for the version whose id is ``kwargs[kwarg]`` (an old route's),
    addressed by code and label, with the old route's other keywords (renamed by ``rename``,
    old → new) and its query string. Raises the 404/403 of ``get_version_for`` for a caller
    who may not read the version."""
    from apps.protocols.access import READ_ROLES, get_version_for

    kwargs = dict(kwargs)
    user = cast(User, request.user)  # signed in: both callers require it
    version = get_version_for(user=user, pk=kwargs.pop(kwarg), roles=READ_ROLES)
    for theirs, ours in (rename or {}).items():
        if theirs in kwargs:
            kwargs[ours] = kwargs.pop(theirs)
    url = reverse(name, kwargs={"code": version.protocol.code, "label": version.label, **kwargs})
    if request.META.get("QUERY_STRING"):
        url += "?" + request.META["QUERY_STRING"]
    return url
