"""Read-only states built once (issue #30): the suite rebuilt the same demo or study for every
module, and often every test, that read it.

Two tools, by how widely a state is shared:

- ``StateDatabases`` (the ``state_databases`` session fixture, tests/conftest.py): a state many
  modules read (the loaded demo) is built once per pytest session and xdist worker into a
  database of its own, the *template*, and each module that asks for it gets a copy of that
  database for itself, dropped at the module's end. On PostgreSQL the copy is ``CREATE DATABASE
  <copy> TEMPLATE <template>``, run by the owner role (the role that created the test database;
  the tests keep running as the runtime role, tests/dbroles.py); on SQLite it is a page copy with
  SQLite's backup API into the test database itself (in memory, as pytest-django makes it).
  The state is written for real (committed), so what a module writes (even a ``transaction=True``
  test) stays in its copy and never reaches another module.
- ``built_once``: a state one module reads is built in a transaction opened for the module and
  rolled back at its end; each test runs in a savepoint inside it. No copy to pay for, but not
  for ``transaction=True`` tests (their flush would empty the state for the tests after them).

    @pytest.fixture(scope="module")
    def study(django_db_setup, django_db_blocker):
        with built_once(django_db_blocker, lambda: opb_study(code="OPB-Z")) as built:
            yield built
"""

import copy
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from django.db import OperationalError, connections, transaction
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


def demo_build() -> None:
    """The demo as ``load_demo`` leaves it (``demo_study_load``): its people, DEMO-OPB's draft
    and OPB-01's history, frozen, answered, scored and analysed. The ``demo_database`` fixture
    (tests/conftest.py) gives a module its copy."""
    from apps.demo.study import demo_study_load

    demo_study_load()


class StateDatabases:
    """The session's templates, one per state name, and the copy of one the current module
    uses. ``cloned(name, build)`` builds the template on first use (``build()`` runs committed,
    as the runtime role, on an empty migrated database) and gives the module a copy; the value
    ``build`` returned is given back, a fresh deep copy per module (model instances keep their
    primary keys, which are the same in every copy)."""

    def __init__(self, django_db_blocker) -> None:
        self.blocker = django_db_blocker
        self.connection = connections["default"]
        self.built: dict[str, Any] = {}
        engine = _Postgres if self.connection.vendor == "postgresql" else _Sqlite
        self.engine = engine(self.connection)

    @contextmanager
    def cloned(self, name: str, build: Callable[[], T]) -> Iterator[T]:
        with self.blocker.unblock():
            if name not in self.built:
                self.built[name] = self.engine.template(name, build)
            self.engine.clone(name)
        try:
            yield copy.deepcopy(self.built[name])
        finally:
            with self.blocker.unblock():
                self.engine.release()

    def close(self) -> None:
        with self.blocker.unblock():
            self.engine.close()


def _forget_ids() -> None:
    """Process caches of database ids: another database may number its rows otherwise."""
    from django.contrib.contenttypes.models import ContentType

    ContentType.objects.clear_cache()


class _Postgres:
    """Templates and copies as PostgreSQL databases next to the test database,
    ``<test database>_<name>`` and ``<test database>_<name>_copy``."""

    def __init__(self, connection) -> None:
        self.connection = connection
        self.home = connection.settings_dict["NAME"]
        self.databases: list[str] = []  # every database made here, dropped at the end

    @contextmanager
    def _owner(self) -> Iterator[Any]:
        """A cursor as the owner role, on no database (CREATE and DROP DATABASE run there)."""
        from apps.core.dbroles import as_owner

        with as_owner(self.connection), self.connection._nodb_cursor() as cursor:
            yield cursor

    def _quote(self, name: str) -> str:
        return self.connection.ops.quote_name(name)

    def _create(self, name: str, template: str) -> None:
        """``CREATE DATABASE name TEMPLATE template``. The template must have no session: ours
        is closed; another thread's may still be closing, so a few tries."""
        self.connection.close()
        with self._owner() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {self._quote(name)}")
            for attempt in range(20):
                try:
                    cursor.execute(
                        f"CREATE DATABASE {self._quote(name)} TEMPLATE {self._quote(template)}"
                    )
                    break
                except OperationalError as error:
                    if "being accessed by other users" not in str(error) or attempt == 19:
                        raise
                    time.sleep(0.25)
            # A new database's ACL is the default one, not its template's: PUBLIC may create
            # temporary tables again, which the test database (runtime_grant) refuses.
            cursor.execute(f"REVOKE TEMPORARY ON DATABASE {self._quote(name)} FROM PUBLIC")
        if name not in self.databases:
            self.databases.append(name)

    def _use(self, name: str) -> None:
        self.connection.close()
        self.connection.settings_dict["NAME"] = name
        _forget_ids()

    def template(self, name: str, build: Callable[[], T]) -> T:
        template = f"{self.home}_{name}"
        self._create(template, self.home)
        self._use(template)
        try:
            built = build()
        finally:
            self._use(self.home)
        return built

    def clone(self, name: str) -> None:
        copy_name = f"{self.home}_{name}_copy"
        self._create(copy_name, f"{self.home}_{name}")
        self._use(copy_name)

    def release(self) -> None:
        copy_name = self.connection.settings_dict["NAME"]
        self._use(self.home)
        with self._owner() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {self._quote(copy_name)}")
        self.databases.remove(copy_name)

    def close(self) -> None:
        with self._owner() as cursor:
            for name in self.databases:
                cursor.execute(f"DROP DATABASE IF EXISTS {self._quote(name)}")


class _Sqlite:
    """Templates as SQLite databases in memory, copied over the test database page by page
    (``sqlite3.Connection.backup``) and emptied again by copying back its migrated snapshot."""

    def __init__(self, connection) -> None:
        self.connection = connection
        self.empty: sqlite3.Connection | None = None
        self.templates: dict[str, sqlite3.Connection] = {}

    def _raw(self) -> sqlite3.Connection:
        self.connection.ensure_connection()
        return self.connection.connection

    def template(self, name: str, build: Callable[[], T]) -> T:
        if self.empty is None:
            self.empty = sqlite3.connect(":memory:")
            self._raw().backup(self.empty)
        built = build()
        self.templates[name] = sqlite3.connect(":memory:")
        self._raw().backup(self.templates[name])
        self.release()
        return built

    def clone(self, name: str) -> None:
        self.templates[name].backup(self._raw())
        _forget_ids()

    def release(self) -> None:
        assert self.empty is not None
        self.empty.backup(self._raw())
        _forget_ids()

    def close(self) -> None:
        for database in [*self.templates.values(), self.empty]:
            if database is not None:
                database.close()
