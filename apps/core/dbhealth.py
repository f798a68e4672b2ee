"""A persistent PostgreSQL connection's health, checked without a round trip.

Django's ``CONN_HEALTH_CHECKS`` asks ``DatabaseWrapper.is_usable()`` on a persistent connection's
first use in each request, and PostgreSQL's answers it with ``SELECT 1``: one round trip of the
reviewer queue's five per request (docs/performance.md, "The queue nearer its floor"). Here each
PostgreSQL connection, when created, gets an ``is_usable`` that answers from the client's side:
a connection between transactions is idle, so the server has nothing to say on it; if its socket
is readable anyway, the server (or PgBouncer) has said something unasked, in practice always that
it is closing the connection — a terminated backend sends its FATAL error and closes, a restarted
server or pooler closes the socket — and Django closes it, so that the request opens a new one,
as after a failed ``SELECT 1``. A connection not idle (left inside a transaction, or in error) is
not usable either.

What it cannot see, ``SELECT 1`` could not either without waiting for TCP's own timeout: a peer
that vanished without closing the connection. An unasked message that is not a goodbye (a
``NOTIFY``, which the app never listens for, or an asynchronous notice) costs one needless
reconnection, never a wrong answer. Django calls the same method after an error in a request
(``close_if_unusable_or_obsolete``): a failed connection's libpq status is bad, so it is closed.
"""

import select
from functools import partial
from typing import Any

from django.db.backends.signals import connection_created
from django.dispatch import receiver
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


def connection_usable(wrapper: Any) -> bool:
    """``DatabaseWrapper.is_usable`` for a PostgreSQL connection, without a round trip (inside a
    transaction Django opened, the server is asked, as Django asks it)."""
    if wrapper.connection is None:
        return False
    if wrapper.in_atomic_block:
        return bool(type(wrapper).is_usable(wrapper))
    return quiet(wrapper.connection.pgconn)


@receiver(connection_created)
def check_without_round_trip(sender: Any, connection: Any, **kwargs: Any) -> None:
    """Give each new PostgreSQL connection ``connection_usable`` as its ``is_usable`` (on the
    instance: Django's class, and so the ``ENGINE`` setting, stay as they are)."""
    if connection.vendor == "postgresql":
        connection.is_usable = partial(connection_usable, connection)
