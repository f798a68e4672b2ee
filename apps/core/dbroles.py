"""The two PostgreSQL roles: the owner that migrates, and the runtime role the application uses.

The guards in ``apps.core.dbguards`` are triggers, and a trigger holds only against a role that
cannot switch it off. PostgreSQL lets three kinds of role do that: a superuser
(``SET session_replication_role = replica`` skips every user trigger), the table's owner or a
member of the owning role (``ALTER TABLE … DISABLE TRIGGER USER``), and a role granted ``SET`` on
``session_replication_role`` (PostgreSQL 15+). So the web application and the workers connect as
a *runtime* role that is none of these (``DATABASE_URL``), and only ``migrate`` connects as the
*owner* (``DATABASE_OWNER_URL``), after which it grants the runtime role the DML it needs:
SELECT and INSERT everywhere, UPDATE and DELETE only where a row may change (a draft, a
reservation), never UPDATE, DELETE or TRUNCATE on an append-only table. ``role_problems`` is what
``manage.py check_db_role`` and ``/healthz`` report. SQLite has no roles: everything here is a
no-op there.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.db.backends.base.base import BaseDatabaseWrapper

from apps.core.dbguards import SEARCH_PATH

_CREDENTIALS = ("USER", "PASSWORD", "HOST", "PORT")

# Trigger functions whose row trigger refuses UPDATE (append-only) or DELETE; the runtime role is
# not granted those privileges on the tables they guard, so the refusal happens twice.
_REFUSES_UPDATE = ("preregistry_refuse_change",)
_REFUSES_DELETE = (
    "preregistry_refuse_change",
    "preregistry_guard_analysis_run",
    "preregistry_guard_publication",
)

# Tables the runtime role reads but never writes.
_READ_ONLY_TABLES = ("django_migrations",)

# Every table with a guard of ours, its trigger functions, and whether a row trigger refuses
# UPDATE / DELETE there (pg_trigger.tgtype bits: ROW 1, DELETE 8, UPDATE 16).
_PROTECTED_SQL = """
    SELECT c.oid, c.relname,
           bool_or(t.tgtype & 1 = 1 AND t.tgtype & 16 = 16 AND p.proname = ANY(%(no_update)s)),
           bool_or(t.tgtype & 1 = 1 AND t.tgtype & 8 = 8 AND p.proname = ANY(%(no_delete)s))
    FROM pg_trigger t
    JOIN pg_class c ON c.oid = t.tgrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_proc p ON p.oid = t.tgfoid
    WHERE NOT t.tgisinternal AND p.proname LIKE 'preregistry\\_%%'
      AND n.nspname = current_schema()
    GROUP BY c.oid, c.relname
    ORDER BY c.relname
"""


def owner_credentials() -> dict[str, Any] | None:
    """USER, PASSWORD, HOST and PORT of ``DATABASE_OWNER_URL``, or None when it is not set."""
    owner = getattr(settings, "DATABASE_OWNER", None)
    if not owner:
        return None
    return {key: owner.get(key, "") for key in _CREDENTIALS}


def runtime_role() -> str:
    """The runtime role's name: the user of ``DATABASE_URL`` ('' for SQLite)."""
    return str(getattr(settings, "DATABASE_RUNTIME_ROLE", "") or "")


def split_roles() -> bool:
    """Whether an owner role distinct from the runtime role is configured."""
    owner = owner_credentials()
    return owner is not None and bool(owner["USER"]) and owner["USER"] != runtime_role()


@contextmanager
def as_owner(connection: BaseDatabaseWrapper) -> Iterator[None]:
    """Run the body with ``connection`` logged in as the owner role (``DATABASE_OWNER_URL``).

    The connection is closed before and after, so no session outlives its role. A no-op when no
    separate owner is configured or the database is not PostgreSQL. Not for concurrent use: it
    changes the connection's settings (``migrate`` and the test database's setup only).
    """
    owner = owner_credentials()
    if (
        owner is None
        or connection.vendor != "postgresql"
        or connection.settings_dict.get("USER") == owner["USER"]
    ):
        yield
        return
    saved = {key: connection.settings_dict.get(key) for key in _CREDENTIALS}
    connection.close()
    connection.settings_dict.update({key: value for key, value in owner.items() if value})
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.update(saved)


def owner_connection(connection: BaseDatabaseWrapper) -> BaseDatabaseWrapper:
    """A new, separate connection to the same database as the owner role (close it after use).

    Falls back to the connection's own credentials when no owner is configured.
    """
    from django.db import connections

    connection = connections[connection.alias]  # the wrapper itself, not django.db.connection
    owner = owner_credentials() or {}
    settings_dict = {
        **connection.settings_dict,
        **{key: value for key, value in owner.items() if value},
    }
    return type(connection)(settings_dict, alias=f"{connection.alias}__owner")


def protected_tables(cursor: Any) -> list[tuple[int, str, bool, bool]]:
    """(oid, name, refuses UPDATE, refuses DELETE) of every table one of our guards protects."""
    cursor.execute(
        _PROTECTED_SQL, {"no_update": list(_REFUSES_UPDATE), "no_delete": list(_REFUSES_DELETE)}
    )
    return [tuple(row) for row in cursor.fetchall()]


def _quote(connection: BaseDatabaseWrapper, name: str) -> str:
    return connection.ops.quote_name(name)


def runtime_grant(connection: BaseDatabaseWrapper, *, role: str | None = None) -> list[str]:
    """Grant the runtime role exactly the privileges it needs; run as the owner after migrating.

    Every table of the schema: SELECT, INSERT, UPDATE, DELETE; then UPDATE revoked where a row
    trigger refuses updates (append-only tables) and DELETE where one refuses deletes; the
    migrations table read-only; sequences USAGE and SELECT. Never TRUNCATE, REFERENCES or
    TRIGGER. Returns the statements run (empty when there is nothing to do: SQLite, or one role).
    """
    role = role if role is not None else runtime_role()
    if connection.vendor != "postgresql" or not role or not split_roles():
        return []
    grantee = _quote(connection, role)
    statements = [
        f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {grantee}",
        f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM {grantee}",
        f"GRANT USAGE ON SCHEMA public TO {grantee}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {grantee}",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {grantee}",
    ]
    database = _quote(connection, connection.settings_dict["NAME"])
    statements += [
        f"REVOKE TEMPORARY ON DATABASE {database} FROM PUBLIC",
        f"REVOKE TEMPORARY ON DATABASE {database} FROM {grantee}",
    ]
    with connection.cursor() as cursor:
        for table in _READ_ONLY_TABLES:
            statements.append(
                f"REVOKE INSERT, UPDATE, DELETE ON {_quote(connection, table)} FROM {grantee}"
            )
        for _oid, table, no_update, no_delete in protected_tables(cursor):
            refused = [name for name, on in (("UPDATE", no_update), ("DELETE", no_delete)) if on]
            if refused:
                statements.append(
                    f"REVOKE {', '.join(refused)} ON {_quote(connection, table)} FROM {grantee}"
                )
        for statement in statements:
            cursor.execute(statement)
    return statements


# Each check: a query returning the names it finds (empty: fine) and the reason to give.
_ROLE_SQL = """
    SELECT current_user, session_user,
           (SELECT rolsuper FROM pg_roles WHERE rolname = current_user),
           (SELECT rolsuper FROM pg_roles WHERE rolname = session_user),
           (SELECT rolcreaterole FROM pg_roles WHERE rolname = current_user),
           has_parameter_privilege('session_replication_role', 'SET'),
           has_database_privilege(current_database(), 'TEMPORARY')
"""

# Our trigger functions whose search path is not the fixed one (apps.core.dbguards.SEARCH_PATH).
_UNPINNED_FUNCTIONS_SQL = """
    SELECT p.proname FROM pg_proc p
    WHERE p.proname LIKE 'preregistry\\_%%'
      AND NOT coalesce(p.proconfig, '{}') @> ARRAY[%(setting)s]
    ORDER BY p.proname
"""


def role_problems(connection: BaseDatabaseWrapper) -> list[str]:
    """Why the connection's role could switch the guards off or rewrite guarded rows ([] if not).

    Checks: TEMPORARY on the database, or a guard function without the fixed ``search_path``
    (either lets a temporary table shadow what a guard reads); superuser (current or session
    user); CREATEROLE (it can grant itself the owner's membership); the right to SET
    ``session_replication_role``; owning, or being a member of the role that owns, a protected
    table (``ALTER TABLE … DISABLE TRIGGER``); TRUNCATE or TRIGGER on a protected table; UPDATE
    on an append-only table; DELETE on a table whose rows are never
    deleted. Empty on SQLite (no roles; the guards there are the application's own).
    """
    if connection.vendor != "postgresql":
        return []
    problems: list[str] = []
    with connection.cursor() as cursor:
        cursor.execute(_ROLE_SQL)
        (user, session, superuser, session_super, createrole, replication, temporary) = (
            cursor.fetchone()
        )
        if superuser or session_super:
            who = user if superuser else session
            problems.append(
                f"the role {who} is a superuser: it can SET session_replication_role = replica "
                "and skip every guard"
            )
        elif replication:
            problems.append(
                f"the role {user} may SET session_replication_role, which skips every guard"
            )
        if createrole:
            problems.append(
                f"the role {user} has CREATEROLE: it can make itself a member of the owner role"
            )
        problems += _shadowing_problems(cursor, user, temporary)
        tables = protected_tables(cursor)
        if not tables:
            problems.append("no guarded table found: has `migrate` run on this database?")
        cursor.execute(
            """
            SELECT c.relname, pg_get_userbyid(c.relowner),
                   pg_has_role(current_user, c.relowner, 'MEMBER'),
                   has_table_privilege(c.oid, 'TRUNCATE'),
                   has_table_privilege(c.oid, 'TRIGGER'),
                   has_table_privilege(c.oid, 'UPDATE'),
                   has_table_privilege(c.oid, 'DELETE')
            FROM pg_class c WHERE c.oid = ANY(%s) ORDER BY c.relname
            """,
            [[oid for oid, *_ in tables]],
        )
        refusals = {
            oid_name: (no_update, no_delete) for _, oid_name, no_update, no_delete in tables
        }
        owned, truncate, trigger, update, delete = [], [], [], [], []
        for name, owner, member, can_truncate, can_trigger, can_update, can_delete in cursor:
            no_update, no_delete = refusals[name]
            if member:
                owned.append(f"{name} (owner {owner})")
            if can_truncate:
                truncate.append(name)
            if can_trigger:
                trigger.append(name)
            if no_update and can_update:
                update.append(name)
            if no_delete and can_delete:
                delete.append(name)
    if owned and not superuser:
        problems.append(
            f"the role {user} owns (or is a member of the owner of) {_some(owned)}: it can "
            "ALTER TABLE … DISABLE TRIGGER"
        )
    for privilege, names in (
        ("TRUNCATE", truncate),
        ("TRIGGER", trigger),
        ("UPDATE", update),
        ("DELETE", delete),
    ):
        if names and not superuser and not owned:
            problems.append(f"the role {user} holds {privilege} on {_some(names)}")
    return problems


def _shadowing_problems(cursor: Any, user: str, temporary: bool) -> list[str]:
    """The TEMPORARY privilege, and guard functions without the fixed search path: either lets a
    temporary table shadow a table a guard reads (issue #33)."""
    problems = []
    if temporary:
        problems.append(
            f"the role {user} may create TEMPORARY tables, which can shadow a guarded table "
            "(REVOKE TEMPORARY ON DATABASE … FROM PUBLIC, or run migrate again)"
        )
    cursor.execute(_UNPINNED_FUNCTIONS_SQL, {"setting": f"search_path={SEARCH_PATH}"})
    unpinned = [name for (name,) in cursor.fetchall()]
    if unpinned:
        problems.append(
            f"the guard functions {_some(unpinned)} have no fixed search_path, so a "
            "temporary table can shadow what they read (run migrate)"
        )
    return problems


def _some(names: list[str], shown: int = 3) -> str:
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def provision(  # noqa: PLR0913 (keyword-only role settings)
    *,
    admin_url: str,
    database: str,
    owner: str,
    runtime: str,
    owner_password: str = "",
    runtime_password: str = "",
    createdb: bool = False,
    adopt: bool = False,
    create_database: bool = True,
) -> list[str]:
    """Create the two roles and the database (idempotent), as a superuser at ``admin_url``.

    ``owner``: LOGIN, not a superuser, no CREATEROLE; CREATEDB only with ``createdb`` (the test
    suite creates its test database as the owner). ``runtime``: LOGIN and nothing else, with
    ``jit = off`` as its setting. The
    database is created owned by ``owner`` (or handed to it); ``adopt`` also hands it every
    table, sequence, view and function of the public schema that another role owns (an existing
    single-role deployment). With ``createdb`` a left-over ``test_<database>`` is handed to the
    owner too, so that it may drop it. CREATE on the public schema and TEMPORARY on the database
    are revoked from PUBLIC.
    ``create_database`` False leaves ``database`` itself alone (the test suite's own set-up).
    Returns what it did, one line each. Raises ``psycopg.Error`` when the server refuses.
    """
    import psycopg
    from psycopg import sql

    done: list[str] = []
    if owner == runtime:
        raise ValueError("the owner and the runtime role must be two different roles")
    admin = psycopg.conninfo.make_conninfo(admin_url.replace("postgres://", "postgresql://", 1))
    with psycopg.connect(admin, dbname="postgres", autocommit=True) as conn:
        for role, password, extra in (
            (owner, owner_password, "CREATEDB" if createdb else "NOCREATEDB"),
            (runtime, runtime_password, "NOCREATEDB"),
        ):
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone()
            verb = "ALTER" if exists else "CREATE"
            options = f"LOGIN NOSUPERUSER NOCREATEROLE NOREPLICATION NOBYPASSRLS {extra}"
            statement = sql.SQL("{} ROLE {} WITH " + options).format(
                sql.SQL(verb), sql.Identifier(role)
            )
            if password:
                statement = sql.SQL("{} PASSWORD {}").format(statement, sql.Literal(password))
            conn.execute(statement)
            done.append(f"{'updated' if exists else 'created'} role {role}")
        # No JIT for the runtime role: its statements are short, and once a table grows past a
        # few million rows a plan's estimated cost crosses jit_above_cost and every execution
        # pays a compilation of ~15 ms (the queue's submit at 10 M tasks went from ~1.3 to
        # 16 ms: docs/performance.md, "Ten million tasks"). A role setting reaches the server
        # session through PgBouncer too, where a startup option would not.
        conn.execute(sql.SQL("ALTER ROLE {} SET jit = off").format(sql.Identifier(runtime)))
        # Neither role may be a member of the other (membership is ownership for ALTER TABLE).
        for member, of in ((runtime, owner), (owner, runtime)):
            conn.execute(
                sql.SQL("REVOKE {} FROM {}").format(sql.Identifier(of), sql.Identifier(member))
            )
        databases = [database] if create_database else []
        databases += [f"test_{database}"] if createdb else []
        for name in databases:
            found = conn.execute(
                "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = %s", [name]
            ).fetchone()
            if found is None and name == database:
                conn.execute(
                    sql.SQL("CREATE DATABASE {} OWNER {}").format(
                        sql.Identifier(name), sql.Identifier(owner)
                    )
                )
                done.append(f"created database {name} owned by {owner}")
            elif found is not None and found[0] != owner:
                conn.execute(
                    sql.SQL("ALTER DATABASE {} OWNER TO {}").format(
                        sql.Identifier(name), sql.Identifier(owner)
                    )
                )
                done.append(f"handed database {name} to {owner}")
    if not create_database:
        return done
    with psycopg.connect(admin, dbname=database, autocommit=True) as conn:
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        # A temporary table would shadow a table of the same name (apps.core.dbguards).
        conn.execute(
            sql.SQL("REVOKE TEMPORARY ON DATABASE {} FROM PUBLIC").format(sql.Identifier(database))
        )
        conn.execute(
            sql.SQL("REVOKE TEMPORARY ON DATABASE {} FROM {}").format(
                sql.Identifier(database), sql.Identifier(runtime)
            )
        )
        conn.execute(
            sql.SQL("GRANT USAGE, CREATE ON SCHEMA public TO {}").format(sql.Identifier(owner))
        )
        if adopt:
            rows = conn.execute(
                """
                SELECT CASE c.relkind WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW'
                       WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'TABLE' END, c.relname
                FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'S', 'v', 'm')
                  AND pg_get_userbyid(c.relowner) <> %s
                  AND NOT (c.relkind = 'S' AND EXISTS (
                      SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype IN ('a', 'i')))
                """,
                [owner],
            ).fetchall()
            for kind, name in rows:
                conn.execute(
                    sql.SQL("ALTER {} {} OWNER TO {}").format(
                        sql.SQL(kind), sql.Identifier(name), sql.Identifier(owner)
                    )
                )
            functions = conn.execute(
                """
                SELECT p.oid::regprocedure::text FROM pg_proc p
                JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE n.nspname = 'public' AND pg_get_userbyid(p.proowner) <> %s
                """,
                [owner],
            ).fetchall()
            for (signature,) in functions:
                conn.execute(
                    sql.SQL("ALTER FUNCTION {} OWNER TO {}").format(
                        sql.SQL(signature), sql.Identifier(owner)
                    )
                )
            done.append(f"handed {len(rows)} relations and {len(functions)} functions to {owner}")
    return done
