"""Pages that belong to no single app: the health check and the home redirect."""

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.template import loader


def _database_status() -> dict:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as error:  # any failure to answer is "down", with the reason
        return {"ok": False, "vendor": connection.vendor, "error": str(error).splitlines()[0]}
    return {"ok": True, "vendor": connection.vendor}


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
    """``{"status": "ok"|"down", "database": {...}, "broker": {...}}``; 503 when either is down."""
    database, broker = _database_status(), _broker_status()
    healthy = database["ok"] and broker["ok"]
    return JsonResponse(
        {"status": "ok" if healthy else "down", "database": database, "broker": broker},
        status=200 if healthy else 503,
    )


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: JSON under ``/api/`` (an API client never parses an HTML page), the
    stand-alone ``500.html`` elsewhere (it needs no database and no static files)."""
    from apps.core.middleware import is_api

    if is_api(request):
        return JsonResponse(
            {"detail": "Server error. Nothing was half-written; the fault has been logged."},
            status=500,
        )
    return HttpResponseServerError(loader.get_template("500.html").render())
