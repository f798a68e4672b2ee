"""The persistent connection's health check without a round trip (``apps.core.dbhealth``).

Each request starts with ``request_started``: Django's ``close_old_connections``, then
``check_idle_connections``, which must keep a healthy idle connection without sending anything
to the server and close one whose backend the server has ended, before the request uses it.
"""

import select
import tempfile
import time

import psycopg
import pytest
from django.core.signals import request_started
from django.db import connection

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _start_request() -> None:
    request_started.send(sender=None, environ={})


@pytest.fixture
def checked_connection(settings):
    """Django's connection, open, idle, persistent and with health checks on (as in
    production; the test settings close it at each request instead)."""
    connection.ensure_connection()
    enabled, close_at = connection.health_check_enabled, connection.close_at
    connection.health_check_enabled, connection.close_at = True, None
    yield connection
    connection.health_check_enabled, connection.close_at = enabled, close_at


def test_a_healthy_idle_connection_is_kept_and_nothing_is_sent(checked_connection):
    raw = checked_connection.connection
    with tempfile.TemporaryFile("w+") as trace:
        raw.pgconn.trace(trace.fileno())
        _start_request()
        raw.pgconn.untrace()
        trace.seek(0)
        sent = trace.read()
    assert checked_connection.connection is raw
    # Checked for this request: Django's own check (``SELECT 1``) is not sent either.
    assert checked_connection.health_check_done
    assert sent == ""


def test_a_connection_the_server_ended_is_closed_before_the_request_uses_it(checked_connection):
    raw = checked_connection.connection
    pid = raw.info.backend_pid
    params = raw.info.get_parameters()
    with psycopg.connect(
        host=params.get("host", "127.0.0.1"),
        port=params.get("port", "5432"),
        dbname=params["dbname"],
        user=params["user"],
        password=checked_connection.settings_dict.get("PASSWORD") or None,
        autocommit=True,
    ) as other:
        assert other.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone() == (True,)
    # The server's goodbye reaches the socket shortly after.
    poller = select.poll()
    poller.register(raw.pgconn.socket, select.POLLIN)
    deadline = time.monotonic() + 10
    while not poller.poll(100) and time.monotonic() < deadline:
        pass
    _start_request()
    assert checked_connection.connection is None
    with checked_connection.cursor() as cursor:  # the request's first query reconnects
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != pid


def test_a_connection_left_inside_a_transaction_is_not_reused(checked_connection):
    raw = checked_connection.connection
    raw.execute("BEGIN")  # behind Django's back: a transaction nobody will finish
    try:
        _start_request()
        assert checked_connection.connection is None
    finally:
        if not raw.closed:
            raw.close()
