"""Read-only states built once per module (issue #30): the suite rebuilt the same demo or study
for every test that read it.

``built_once`` opens a transaction for a module-scoped fixture and builds the state in it; each
test of the module then runs in a savepoint inside it (pytest-django's ordinary ``django_db``),
so whatever a test writes is rolled back at its end and the next test sees the state as built.
At the end of the module the whole transaction is rolled back: the database is as empty as
before. Works on SQLite and PostgreSQL alike. Not for ``transaction=True`` tests (their flush
would empty the state for the tests after them).

    @pytest.fixture(scope="module")
    def study(django_db_setup, django_db_blocker):
        with built_once(django_db_blocker, lambda: opb_study(code="OPB-Z")) as built:
            yield built
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from django.db import transaction
from django.test import TestCase

T = TypeVar("T")


@contextmanager
def built_once(django_db_blocker, build: Callable[[], T]) -> Iterator[T]:
    """``build()`` in a transaction rolled back when the block ends; the ``on_commit``
    callbacks of what it builds run at once (as ``captureOnCommitCallbacks(execute=True)``)."""
    with django_db_blocker.unblock():
        atomic = transaction.atomic()
        atomic._from_testcase = True  # as Django's TestCase marks its own: durable blocks nest
        atomic.__enter__()
        try:
            with TestCase.captureOnCommitCallbacks(execute=True):
                built = build()
        except BaseException:
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)
            raise
    try:
        yield built
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)
