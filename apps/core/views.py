"""Pages that belong to no single app (the health check and the home redirect), and the
responses several apps answer with: a file download (``attachment``; ``named`` names any
response's file), a plot drawn for the page's width (``svg_plot``) and the status fragment a
page polls (``polled_status``)."""

import sys
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.db import connection
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.template import loader

from apps.core.dbroles import role_problems
from apps.core.inputs import whole_number

R = TypeVar("R", bound=HttpResponseBase)


def named(response: R, filename: str, *, inline: bool = False) -> R:
    """``response`` with its ``Content-Disposition``: ``attachment`` (a download; ``inline``: shown
    by the browser) with ``filename`` (ASCII, quoted as it is given). Every download the app
    serves is named here."""
    disposition = "inline" if inline else "attachment"
    response["Content-Disposition"] = f'{disposition}; filename="{filename}"'
    return response


def attachment(content: bytes | str, *, content_type: str, filename: str) -> HttpResponse:
    """A download of ``content``: a 200 whose ``Content-Disposition`` is ``attachment`` with
    ``filename`` (``named``)."""
    return named(HttpResponse(content, content_type=content_type), filename)


NO_SUCH_PLOT = "No such plot."


def svg_plot(request: HttpRequest, draw: Callable[[int | None], bytes]) -> HttpResponse:
    """An SVG plot: ``draw(width)`` with the page's ``?w=`` (CSS px; None unless digits), which
    raises IndexError for a plot that is not there (a 404)."""
    width = request.GET.get("w", "")
    try:
        svg = draw(whole_number(width))
    except IndexError as error:
        raise Http404(NO_SUCH_PLOT) from error
    return HttpResponse(svg, content_type="image/svg+xml")


def polled_status(
    request: HttpRequest, template: str, context: dict[str, Any], *, finished: bool
) -> HttpResponse:
    """The status fragment ``template`` a page polls (htmx). Once ``finished``, ``HX-Refresh``
    asks the browser to reload the page, so what finished (a report, a failure) shows in full."""
    response = render(request, template, context)
    if finished and request.headers.get("HX-Request"):
        response["HX-Refresh"] = "true"
    return response


def _database_status() -> dict:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as error:  # any failure to answer is "down", with the reason
        return {"ok": False, "vendor": connection.vendor, "error": str(error).splitlines()[0]}
    status: dict = {"ok": True, "vendor": connection.vendor}
    if connection.vendor == "postgresql":
        try:
            problems = role_problems(connection)
        except Exception as error:  # a catalog query that fails is reported, not raised
            problems = [f"the role could not be checked: {str(error).splitlines()[0]}"]
        status["role"] = {"least_privilege": not problems, "problems": problems}
    return status


def _role_acceptable(database: dict) -> bool:
    role = database.get("role")
    return role is None or role["least_privilege"] or not settings.DATABASE_ROLE_ENFORCED


def _broker_status() -> dict:
    if not settings.REDIS_URL:
        return {"ok": True, "mode": "eager", "detail": "no REDIS_URL: tasks run in-process"}
    import redis

    try:
        client = redis.Redis.from_url(
            settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=1
        )
        client.ping()
    except Exception as error:  # any failure to answer is "down", with the reason
        return {"ok": False, "mode": "redis", "error": str(error).splitlines()[0]}
    return {"ok": True, "mode": "redis"}


def healthz(request: HttpRequest) -> JsonResponse:
    """``{"status": "ok"|"down", "database": {...}, "broker": {...}}``; 503 when either is down.

    On PostgreSQL ``database.role`` says whether the runtime role is least-privileged, with the
    reasons it is not (``manage.py check_db_role``'s); with ``DATABASE_ROLE_ENFORCED`` (production)
    a role that could switch the guards off makes the answer 503 too.
    """
    database, broker = _database_status(), _broker_status()
    healthy = database["ok"] and broker["ok"] and _role_acceptable(database)
    return JsonResponse(
        {"status": "ok" if healthy else "down", "database": database, "broker": broker},
        status=200 if healthy else 503,
    )


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: JSON under ``/api/`` (an API client never parses an HTML page), the
    stand-alone ``500.html`` elsewhere (it needs no database and no static files)."""
    from apps.core.middleware import DATABASE_UNAVAILABLE, database_unavailable, is_api

    # Raised outside a view (a middleware reading the session, say), a database fault reaches
    # here rather than the middleware's process_exception: still a 503, never a 500.
    fault = sys.exc_info()[1]
    if isinstance(fault, DATABASE_UNAVAILABLE):
        return database_unavailable(request, fault)
    if is_api(request):
        return JsonResponse(
            {"detail": "Server error. Nothing was half-written; the fault has been logged."},
            status=500,
        )
    return HttpResponseServerError(loader.get_template("500.html").render())
