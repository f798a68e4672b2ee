"""Middleware of every request: request guards, and domain errors answered on pages.

``DomainErrorMiddleware``: a ``NotFound`` (``apps.core.errors``) raised by a service or selector
under a page becomes Django's 404, as the API answers it.

Request guards that hold for every URL, so no view has to repeat them.

``RequestGuardMiddleware`` sits near the top of ``MIDDLEWARE`` and:

- answers 400 to a NUL character (U+0000) anywhere in the path, the query string or a form (names,
  values and uploaded file names). PostgreSQL cannot hold NUL in text, so without this every
  lookup by a path parameter would crash on it, and every view would need its own check;
- answers 400 to a cookie (name or value, after unquoting) holding a NUL or a lone surrogate,
  before the session middleware looks it up (``cookie_problem``);
- answers 400 to a request whose client went away mid-body (``UnreadablePostError``), logged as
  information, not as a server error: the fault is the connection's, not ours;
- answers 503 when the database cannot be reached or dropped the connection
  (``OperationalError``/``InterfaceError``): a JSON body under ``/api/``, the stand-alone
  ``503.html`` elsewhere (``database_unavailable``); every other fault reaches ``handler500``
  (``apps.core.views.server_error``), which answers JSON under ``/api/`` and also answers 503
  to a database fault raised outside a view (in a middleware), so it is never a 500.
"""

import logging
from collections.abc import Callable, Iterable
from typing import cast

import csp.middleware
from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CheckableLazyObject
from csp.utils import build_policy
from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.core.signals import setting_changed
from django.db import DatabaseError, InterfaceError, OperationalError
from django.dispatch import receiver
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.http.request import UnreadablePostError
from django.http.response import HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.template import loader
from django.urls import Resolver404, ResolverMatch, resolve

from apps.core.dbguards import unique_violation_message
from apps.core.errors import NotFound, StateConflict
from apps.core.inputs import text_problem

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"
NUL = "\x00"
_FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def is_api(request: HttpRequest) -> bool:
    """Whether ``request`` is under ``/api/`` (whose answers are JSON, errors included)."""
    return request.path_info.startswith(API_PREFIX)


def _first_nul(pairs: Iterable[tuple[str, str]], where: str) -> str | None:
    for key, value in pairs:
        if NUL in key:
            return f"a {where} parameter name"
        if NUL in value:
            return f"the {where} parameter {key!r}"
    return None


def nul_location(request: HttpRequest) -> str | None:
    """Where the request holds a NUL character (``"the path"``, ``"the query parameter 'q'"``,
    …), or None. Reads the form body only for form content types (as CSRF checking does)."""
    if NUL in request.path_info or NUL in request.path:
        return "the path"
    found = _first_nul(((k, v) for k, vs in request.GET.lists() for v in vs), "query")
    if found:
        return found
    if request.method in ("POST", "PUT", "PATCH") and request.content_type in _FORM_TYPES:
        found = _first_nul(((k, v) for k, vs in request.POST.lists() for v in vs), "form")
        if found:
            return found
        for key, files in request.FILES.lists():
            if any(NUL in (f.name or "") for f in files):
                return f"the name of the file in {key!r}"
    return None


def cookie_problem(request: HttpRequest) -> str | None:
    """What is wrong with a cookie (``"the cookie 'sessionid' may not contain …"``), or None.

    A quoted cookie value is unquoted with its octal escapes (``"\\000"`` is NUL), and the
    session and CSRF middlewares look the value up, in the database for the session: a NUL there
    was a 500 on every page, signed in or not (issue #33). Names and values are checked alike.
    """
    for key, value in request.COOKIES.items():
        problem = text_problem(key) or text_problem(value)
        if problem is not None:
            name = key.encode("utf-8", "backslashreplace").decode()
            return f"the cookie {name!r}: {problem}"
    return None


# What a database that cannot be reached, or dropped the connection, raises.
DATABASE_UNAVAILABLE = (OperationalError, InterfaceError)


def database_unavailable(request: HttpRequest, exception: BaseException) -> HttpResponse:
    """The 503 answer to a database that is unreachable or went away, logged once as an error:
    JSON under ``/api/``, the stand-alone ``503.html`` (no database, no static files) elsewhere.
    """
    logger.error(
        "Database unavailable answering %s %s",
        request.method,
        request.path,
        exc_info=exception,
    )
    if is_api(request):
        response: HttpResponse = JsonResponse(
            {"detail": "The database is unavailable. Nothing was changed; try again shortly."},
            status=503,
        )
    else:
        response = HttpResponse(loader.get_template("503.html").render(), status=503)
    response["Retry-After"] = "30"
    response._has_been_logged = True  # type: ignore[attr-defined]  # logged above
    return response


def _bad_request(request: HttpRequest, message: str) -> HttpResponse:
    if is_api(request):
        return JsonResponse({"detail": message}, status=400)
    return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")


class RequestGuardMiddleware:
    """See the module docstring. Place it right after ``SecurityMiddleware``."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            where = nul_location(request)
        except UnreadablePostError:
            return _client_went_away(request)
        if where is not None:
            return _bad_request(request, f"{where} may not contain a NUL character (U+0000).")
        problem = cookie_problem(request)
        if problem is not None:
            return _bad_request(request, f"{problem}. Clear this site's cookies and try again.")
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        return guarded_exception(request, exception)


def _client_went_away(request: HttpRequest) -> HttpResponse:
    logger.info("Client went away mid-body: %s %s", request.method, request.path)
    response = _bad_request(request, "The request body was cut off before it ended.")
    # Not a server fault, and the client is gone: no error (or warning) in the log.
    response._has_been_logged = True  # type: ignore[attr-defined]
    return response


def guarded_exception(request: HttpRequest, exception: Exception) -> HttpResponse | None:
    """The answer to an exception a view raised that is not the server's fault: 400 to a
    client gone mid-body, 503 to a database that is unreachable or went away; None otherwise."""
    if isinstance(exception, UnreadablePostError):
        return _client_went_away(request)
    if isinstance(exception, DATABASE_UNAVAILABLE):
        return database_unavailable(request, exception)
    return None


class DomainErrorMiddleware:
    """A ``NotFound`` raised by a service or selector under a view becomes Django's 404; a
    ``StateConflict`` the page ``409.html`` (JSON under ``/api/``) with its message, and so does
    a write that lost a race on a unique index (``unique_violation_message``)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, NotFound):
            raise Http404(str(exception)) from exception
        message = (
            str(exception)
            if isinstance(exception, StateConflict)
            else unique_violation_message(exception)
            if isinstance(exception, DatabaseError)
            else None
        )
        if message is not None:
            if is_api(request):
                return JsonResponse({"detail": message}, status=409)
            page = loader.render_to_string("409.html", {"exception": message}, request)
            return HttpResponse(page, status=409)
        return None


# The response attributes by which django-csp's decorators shape one response's policy.
_CSP_PER_RESPONSE = tuple(
    f"_csp_{kind}{suffix}" for kind in ("config", "update", "replace") for suffix in ("", "_ro")
)


class CSPMiddleware(csp.middleware.CSPMiddleware):
    """django-csp's middleware, with the header of a plain response built once per process.

    django-csp builds the policy text on every response (``dataclasses.asdict`` of its parts, then
    ``build_policy``, for the enforced and the report-only header alike): about 350 Python calls,
    a seventh of a reviewer-queue request's CPU (docs/performance.md, "Where a cycle's time
    goes"). When no decorator shaped this response's policy and no nonce was drawn, the text
    depends on settings alone, so it is built once and reused; ``setting_changed`` empties the
    cache. Any other response goes to django-csp unchanged, and the rules for setting a header
    (not already set, not exempted, path not excluded) are django-csp's own.
    """

    _built: dict[bool, str] = {}

    def process_response(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        if (
            settings.DEBUG  # django-csp leaves DEBUG's 404 and 500 pages without a header
            or getattr(request, "_csp_nonce", None) is not None
            or any(getattr(response, name, None) is not None for name in _CSP_PER_RESPONSE)
        ):
            return super().process_response(request, response)
        for report_only, header, exempt, setting in (
            (False, HEADER, "_csp_exempt", "CONTENT_SECURITY_POLICY"),
            (True, HEADER_REPORT_ONLY, "_csp_exempt_ro", "CONTENT_SECURITY_POLICY_REPORT_ONLY"),
        ):
            policy = self._built.get(report_only)
            if policy is None:
                policy = self._built[report_only] = build_policy(report_only=report_only)
            prefixes = (getattr(settings, setting, None) or {}).get("EXCLUDE_URL_PREFIXES") or ()
            if (
                policy
                and header not in response
                and not getattr(response, exempt, False)
                and not request.path_info.startswith(tuple(prefixes))
            ):
                response[header] = policy
        # As django-csp does: a nonce asked for after the header is written is an error.
        request.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)  # type: ignore[attr-defined]
        return response


@receiver(setting_changed)
def _csp_settings_changed(*, setting: str, **kwargs: object) -> None:
    if setting.startswith("CONTENT_SECURITY_POLICY"):
        CSPMiddleware._built.clear()


class TokenAPIMiddleware:
    """API requests to a view that asks for it skip the page middleware.

    A view class with ``page_middleware = False`` (the reviewer queue's next and score, where a
    request's own CPU is the queue's throughput, and the log's inclusion proof:
    docs/performance.md) is called without the middleware that only pages use, for a request
    under ``/api/`` that carries ``Authorization: Token …`` or that is a GET:

    - a token request skips sessions, CSRF (DRF exempts its views; a token request never falls
      back to the session), the signed-in user (DRF's token authentication sets it), messages,
      htmx, the history request, django-axes (sign-in only), whitenoise (static files) and the
      trailing-slash redirect;
    - a GET without a token keeps the session and the signed-in user (its caller may be signed
      in) and skips the rest: a GET changes nothing, so it needs no CSRF check, no messages, no
      history request, and axes watches sign-ins only.

    What every answer needs stays: the middleware above this one (security headers, the
    request guards), X-Frame-Options and the Content-Security-Policy, a Content-Length, and the
    request guards' answers to a view's exception (``guarded_exception``). Any other request —
    another method with a session, another view, a path that does not resolve — takes the
    whole stack unchanged. Which paths lead to such a view is remembered per path
    (``_lean_match``), so the other API requests pay one dictionary lookup.

    Place it right after ``RequestGuardMiddleware``.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response
        # The answer's own headers, as the full stack sets them (same classes, same order).
        self.lean = XFrameOptionsMiddleware(CSPMiddleware(self._view))
        self.lean_session = SessionMiddleware(AuthenticationMiddleware(self.lean))

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if not request.path_info.startswith(API_PREFIX):
            return self.get_response(request)
        token = request.META.get("HTTP_AUTHORIZATION", "").startswith("Token ")
        if token or request.method == "GET":
            match = _lean_match(request.path_info)
            if match is not None:
                request.resolver_match = match
                chain = self.lean if token else self.lean_session
                return cast(HttpResponseBase, chain(request))  # a sync chain
        return self.get_response(request)

    @staticmethod
    def _view(request: HttpRequest) -> HttpResponseBase:
        match = request.resolver_match
        assert match is not None  # set by __call__
        try:
            response = match.func(request, *match.args, **match.kwargs)
            render = getattr(response, "render", None)
            if callable(render):
                response = render()
        except Exception as exception:
            guarded = guarded_exception(request, exception)
            if guarded is None:
                raise  # to Django's handler, as from any view (handler500: JSON under /api/)
            response = guarded
        if not response.streaming and not response.has_header("Content-Length"):
            response.headers["Content-Length"] = str(len(response.content))  # type: ignore[attr-defined]
        return response


_LEAN_PATHS: dict[str, ResolverMatch | None] = {}
_LEAN_PATHS_MAX = 4096


def _lean_match(path: str) -> ResolverMatch | None:
    """The URL match of ``path`` when it leads to a view with ``page_middleware = False``, else
    None; remembered per path (bounded: emptied when full), since resolving costs as much as a
    small view (a ResolverMatch is read, never changed, by the views)."""
    try:
        return _LEAN_PATHS[path]
    except KeyError:
        pass
    try:
        match: ResolverMatch | None = resolve(path)
    except Resolver404:
        match = None
    if match is not None and getattr(getattr(match.func, "cls", None), "page_middleware", True):
        match = None
    if len(_LEAN_PATHS) >= _LEAN_PATHS_MAX:
        _LEAN_PATHS.clear()
    _LEAN_PATHS[path] = match
    return match


@receiver(setting_changed)
def _urlconf_changed(*, setting: str, **kwargs: object) -> None:
    if setting == "ROOT_URLCONF":
        _LEAN_PATHS.clear()
