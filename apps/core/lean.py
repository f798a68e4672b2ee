"""A lean path for hot API reads (``LeanReadApi``). Apart from ``apps.core.apis`` because that
module is loaded by DRF's settings (its parser), before ``rest_framework.views`` exists."""

import contextlib
from typing import Any, cast

from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.utils.cache import patch_vary_headers
from rest_framework import exceptions
from rest_framework.authentication import SessionAuthentication
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from apps.core.errors import NotFound


class LeanReadApi(APIView):
    """An API view whose successful GET skips DRF's request wrapping, content negotiation and
    rendering: for a hot read (the log's inclusion proof, docs/performance.md) where they cost
    more than the answer. Nothing about who may read changes, nor any answer but a 200's path.

    A subclass writes ``get`` as usual (the full DRF path: every error, the browsable API, the
    schema) and ``lean_get(request, user, **kwargs)``, which returns the response's data, or
    None to hand the request to the full path. The lean path is taken only for a GET that DRF
    would answer in JSON (no ``format`` parameter, no ``Accept`` that asks for HTML), by an
    active signed-in user (the session, as DRF's ``SessionAuthentication`` reads it) or a valid
    ``Authorization: Token`` (``TokenAuthentication``, in that order, as in settings), after
    the view's permission classes and throttles allow it. Any ``Http404``,
    ``PermissionDenied`` or validation error ``lean_get`` raises hands the request to the full
    path too, so that every refusal is the one DRF gives (same status, body and timing path);
    the throttles then do not count it twice. The body is DRF's ``JSONRenderer``'s bytes, with
    the ``Allow`` and ``Vary: Accept`` headers DRF sets. ``page_middleware = False`` also lets
    ``TokenAPIMiddleware`` skip the page-only middleware for these requests.
    """

    page_middleware = False
    _FALLBACK = (
        Http404,
        PermissionDenied,
        DjangoValidationError,
        NotFound,
        exceptions.APIException,
    )

    def lean_get(self, request: HttpRequest, user: Any, **kwargs: Any) -> Any | None:
        raise NotImplementedError

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if request.method == "GET" and _json_wanted(request):
            user = _lean_user(self, request)
            if user is not None:
                # What DRF's Request sets on the request it wraps (the throttles read it); put
                # back as it was when the full path takes over, so that DRF authenticates anew.
                before = request.__dict__.get("user", _UNSET)
                request.user = user
                data = None
                if self._lean_permitted(request) and self._lean_throttles_allow(request):
                    with contextlib.suppress(*self._FALLBACK):  # the full path answers those
                        data = self.lean_get(request, user, **kwargs)
                if data is not None:
                    response = HttpResponse(_RENDERER.render(data), content_type="application/json")
                    response["Allow"] = ", ".join(self.allowed_methods)
                    patch_vary_headers(response, ("Accept",))
                    return response
                if before is _UNSET:
                    del request.user
                else:
                    request.user = before
        return super().dispatch(request, *args, **kwargs)

    def _lean_permitted(self, request: HttpRequest) -> bool:
        # The view's permission classes, as DRF's check_permissions asks them (they read the
        # user and the method, which the plain request has); a refusal goes to the full path,
        # which answers it with DRF's own 403.
        plain: Any = request
        return all(permission.has_permission(plain, self) for permission in self.get_permissions())

    def _lean_throttles_allow(self, request: HttpRequest) -> bool:
        # DRF's throttles read only the user and the address (META): the plain request has both.
        plain: Any = request
        if not all(throttle.allow_request(plain, self) for throttle in self.get_throttles()):
            return False  # the full path refuses it, with DRF's 429 and Retry-After
        request._lean_throttled = True  # type: ignore[attr-defined]
        return True

    def check_throttles(self, request: Any) -> None:
        if getattr(request._request, "_lean_throttled", False):
            return  # counted once already, on the lean path that handed this request on
        super().check_throttles(request)


_RENDERER = JSONRenderer()
_UNSET = object()


def _json_wanted(request: HttpRequest) -> bool:
    """Whether DRF's negotiation would pick JSON for ``request`` without a doubt."""
    if "format" in request.GET:
        return False
    accept = request.META.get("HTTP_ACCEPT", "")
    return not accept or (
        "html" not in accept and ("application/json" in accept or "*/*" in accept)
    )


def _lean_user(view: APIView, request: HttpRequest) -> Any | None:
    """The caller as the view's authentication classes, in their order, find it, or None
    (anonymous, inactive, a bad token: the full path answers those). ``SessionAuthentication``
    reads the user the middleware set (its CSRF check is for unsafe methods only); the others
    (DRF's token schemes) read the request's headers, so they take the plain request."""
    for authenticator in view.get_authenticators():
        if isinstance(authenticator, SessionAuthentication):
            user = getattr(request, "user", None)  # AuthenticationMiddleware's, when it ran
            if user is not None and getattr(user, "is_active", False):
                return user
            continue
        try:
            found = authenticator.authenticate(cast(Any, request))  # reads headers only
        except exceptions.AuthenticationFailed:
            return None
        if found is not None:
            request.lean_auth = found[1]  # type: ignore[attr-defined]  # what DRF's request.auth holds
            return found[0]
    return None
