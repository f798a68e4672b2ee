"""A persistent PostgreSQL connection's health, checked without a round trip.

Django's ``CONN_HEALTH_CHECKS`` sends ``SELECT 1`` on a persistent connection's first use in each
request: one round trip of the reviewer queue's six per request (docs/performance.md, "The queue
nearer its floor"). This module checks the same thing from the client's side at the start of each
request: a connection between transactions is idle, so the server has nothing to say on it; if
its socket is readable anyway, the server (or PgBouncer) has said something unasked, in practice
always that it is closing the connection — a terminated backend sends its FATAL error and closes,
a restarted server or pooler closes the socket — and the connection is closed here, so that the
request opens a new one, as after a failed ``SELECT 1``. A connection that passes is marked
checked for the request (``health_check_done``), so Django does not ask the server again.

What it cannot see, ``SELECT 1`` could not either without waiting for TCP's own timeout: a peer
that vanished without closing the connection. An unasked message that is not a goodbye (a
``NOTIFY``, which the app never listens for, or an asynchronous notice) costs one needless
reconnection, never a wrong answer. After an error in a request Django still checks with
``SELECT 1`` (``close_if_unusable_or_obsolete``), unchanged.
"""

import select
from typing import Any

from django.db import connections
from psycopg import pq


def quiet(pgconn: pq.abc.PGconn) -> bool:
    """Whether a libpq connection is open, idle between transactions and has nothing unread
    from the server: then it can be reused without asking the server first."""
    if pgconn.status != pq.ConnStatus.OK:
        return False
    if pgconn.transaction_status != pq.TransactionStatus.IDLE:
        return False
    poller = select.poll()
    poller.register(pgconn.socket, select.POLLIN | select.POLLERR | select.POLLHUP)
    return not poller.poll(0)


def check_idle_connections(**kwargs: Any) -> None:
    """``request_started`` receiver (after Django's own ``close_old_connections``): each open
    PostgreSQL connection that Django would check this request is checked by ``quiet`` instead
    of by ``SELECT 1``, and closed when it fails."""
    for each in connections.all(initialized_only=True):
        wrapper: Any = each  # django-stubs do not declare the health-check attributes
        if (
            wrapper.vendor != "postgresql"
            or wrapper.connection is None
            or not wrapper.health_check_enabled
            or wrapper.health_check_done
            or wrapper.in_atomic_block
        ):
            continue
        if quiet(wrapper.connection.pgconn):
            wrapper.health_check_done = True
        else:
            wrapper.close()
