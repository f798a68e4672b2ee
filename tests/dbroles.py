"""The test suite's database roles: the test database is created, migrated and emptied by the
owner role, and every test runs as the runtime role, as the application does in production.

With ``DATABASE_OWNER_URL`` set (``.ci/run``), those are the two roles. With only a superuser's
``DATABASE_URL`` (a developer's machine), the session creates ``<name>_owner`` and
``<name>_app`` itself, without passwords (the local server trusts 127.0.0.1), so a PostgreSQL run
is a runtime-role run everywhere. Any other single role is used as it is, and the tests that
need two roles fail under CI or skip.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.db import connections

from apps.core import dbroles

_state: dict[str, Any] = {}


def _is_superuser(settings_dict: dict[str, Any]) -> bool:
    import psycopg

    conninfo = psycopg.conninfo.make_conninfo(
        dbname="postgres",
        user=settings_dict["USER"],
        password=settings_dict.get("PASSWORD") or None,
        host=settings_dict.get("HOST") or None,
        port=settings_dict.get("PORT") or None,
    )
    with psycopg.connect(conninfo, autocommit=True) as conn:
        return bool(
            conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()[0]
        )


def _admin_url(settings_dict: dict[str, Any]) -> str:
    password = f":{settings_dict['PASSWORD']}" if settings_dict.get("PASSWORD") else ""
    return (
        f"postgresql://{settings_dict['USER']}{password}@{settings_dict.get('HOST') or '127.0.0.1'}"
        f":{settings_dict.get('PORT') or 5432}/postgres"
    )


@contextmanager
def _roles_lock(settings_dict: dict[str, Any], name: str) -> Iterator[None]:
    """One session at a time creates the roles of ``name``: the xdist workers of one run
    (``make test``) all start by provisioning the same two roles."""
    import psycopg

    with psycopg.connect(_admin_url(settings_dict), autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(hashtext(%s))", [f"preregistry-test-roles:{name}"])
        yield


def before_setup() -> None:
    """Log the default connection in as the owner, creating the roles first if need be."""
    database = settings.DATABASES["default"]
    if database["ENGINE"] != "django.db.backends.postgresql":
        return
    if not dbroles.split_roles() and _is_superuser(database):
        name = database["NAME"]
        owner, runtime = f"{name}_owner", f"{name}_app"
        _state["superuser"] = {key: database.get(key) for key in ("USER", "PASSWORD")}
        with _roles_lock(database, name):
            dbroles.provision(
                admin_url=_admin_url(database),
                database=name,
                owner=owner,
                runtime=runtime,
                createdb=True,
                create_database=False,
            )
        settings.DATABASE_OWNER = {
            "USER": owner,
            "PASSWORD": "",
            "HOST": database.get("HOST", ""),
            "PORT": database.get("PORT", ""),
        }
        settings.DATABASE_RUNTIME_ROLE = runtime
        database["USER"], database["PASSWORD"] = runtime, ""
    if dbroles.split_roles():
        _state["runtime"] = {key: database.get(key) for key in ("USER", "PASSWORD")}
        owner = dbroles.owner_credentials()
        database.update({key: value for key, value in owner.items() if value})
        database["PASSWORD"] = owner["PASSWORD"]


def _log_in_as(credentials: dict[str, Any]) -> None:
    for connection in connections.all():
        connection.close()
    settings.DATABASES["default"].update(credentials)


def after_setup() -> None:
    """From here on, every connection logs in as the runtime role."""
    if "runtime" in _state:
        _log_in_as(_state["runtime"])


def before_teardown() -> None:
    """The owner drops the test database it created."""
    if "runtime" in _state:
        owner = dbroles.owner_credentials()
        _log_in_as({"USER": owner["USER"], "PASSWORD": owner["PASSWORD"]})


def two_roles() -> bool:
    """Whether the tests run as a runtime role distinct from the owner."""
    return "runtime" in _state


def refused_by_database(message: str, operation: str = "") -> bool:
    """Whether ``message`` is the database refusing a write: one of our guards (naming
    ``operation`` when given), or, for the runtime role, the privilege it was never granted."""
    return f"preregistry: {operation}" in message or "permission denied for" in message


@contextmanager
def owner_cursor() -> Iterator[Any]:
    """A cursor on a separate connection as the owner role, in a transaction committed at the end
    (rolled back on error). It sees committed rows only: use it from ``transaction=True`` tests.
    The owner is what an attacker with the migration credentials would be."""
    conn = dbroles.owner_connection(connections["default"])
    try:
        with conn.cursor() as cursor:
            conn.set_autocommit(False)
            yield cursor
        conn.commit()
    finally:
        conn.close()


def superuser_name() -> str | None:
    """A superuser the tests may connect as (the one that created the roles: this session, or
    ``.ci/run`` with ``DATABASE_ADMIN_URL``), or None."""
    import os
    import urllib.parse

    admin = os.environ.get("DATABASE_ADMIN_URL")
    if admin:
        return urllib.parse.urlsplit(admin).username
    return (_state.get("superuser") or {}).get("USER")


def assert_sql_refused(sql: str, params: Any) -> None:
    """Run ``sql`` as the test's (runtime) role in its own savepoint and assert the database
    refuses it: a trigger's or a missing privilege's refusal (``refused_by_database``)."""
    import pytest
    from django.db import DatabaseError, connection, transaction

    with (
        pytest.raises(DatabaseError) as error,
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(sql, params)
    assert refused_by_database(str(error.value)), error.value
