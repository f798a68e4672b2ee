"""The persistent connection's health check without a round trip (``apps.core.dbhealth``).

A request starts with ``request_started`` (Django's ``close_old_connections``); its first query
runs Django's health check (``CONN_HEALTH_CHECKS``), which must keep a healthy idle connection
without sending ``SELECT 1``, and close one whose backend the server has ended, or that was left
inside a transaction, before the query uses it.
"""

import select
import tempfile
import time

import psycopg
import pytest
from django.core.signals import request_started
from django.db import connection
from psycopg import pq

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _start_request() -> None:
    request_started.send(sender=None, environ={})


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


@pytest.fixture
def checked_connection():
    """Django's connection, open, idle, persistent and with health checks on (as in
    production; the test settings close it at each request instead)."""
    connection.ensure_connection()
    enabled, close_at = connection.health_check_enabled, connection.close_at
    connection.health_check_enabled, connection.close_at = True, None
    yield connection
    connection.health_check_enabled, connection.close_at = enabled, close_at


def test_a_healthy_idle_connection_is_kept_and_only_the_query_is_sent(checked_connection):
    raw = checked_connection.connection
    pid = raw.info.backend_pid
    _start_request()
    with tempfile.TemporaryFile("w+") as trace:
        raw.pgconn.trace(trace.fileno())
        raw.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        assert _backend_pid() == pid
        raw.pgconn.untrace()
        trace.seek(0)
        sent = [line.split("\t") for line in trace.read().splitlines()]
    queries = [f[3] for f in sent if len(f) > 3 and f[0] == "F" and f[2] in ("Query", "Parse")]
    assert checked_connection.connection is raw
    assert checked_connection.health_check_done
    # Sent by the client ("F"): the query, and no ``SELECT 1`` before it.
    assert queries == [' "SELECT pg_backend_pid()"'], sent


def test_a_connection_the_server_ended_is_replaced_before_the_request_uses_it(
    checked_connection,
):
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
    assert _backend_pid() != pid  # no error: the health check reconnected first
    assert checked_connection.connection is not raw


def test_a_connection_left_inside_a_transaction_is_not_reused(checked_connection):
    raw = checked_connection.connection
    pid = raw.info.backend_pid
    raw.execute("BEGIN")  # behind Django's back: a transaction nobody will finish
    _start_request()
    try:
        assert _backend_pid() != pid
    finally:
        if not raw.closed:
            raw.close()
