"""Database-level guards: PostgreSQL triggers that make rows append-only or frozen.

The application has no update or delete path for these rows, but "the code does not do it" is not
the promise; the promise is that the database refuses it. Each guard is a migration operation that
runs only on PostgreSQL (SQLite, the embedded development default, keeps the application-level
checks only; the PostgreSQL tests prove the triggers).

Refusals raise SQLSTATE P0001 with a message starting ``preregistry:``, which the API's exception
handler turns into a 409 response.
"""

import re

from django.db import migrations

# Every guard function runs with this search path, fixed at creation (``SET search_path``), and
# names every relation with its schema. A trigger function otherwise resolves its names through
# the *caller's* search path, where the caller's temporary schema comes first: a role that may
# create a TEMP table called ``protocols_protocolversion`` would shadow the real one and switch
# the frozen-version guard off (issue #33). ``pg_temp`` is named last because PostgreSQL searches
# it first whenever the path leaves it out (PostgreSQL docs, "Writing SECURITY DEFINER Functions
# Safely"). The runtime role holds no TEMPORARY privilege either (``apps.core.dbroles``), and
# ``check_db_role`` fails when either safeguard is missing.
SEARCH_PATH = "pg_catalog, public, pg_temp"

_FUNCTIONS = rf"""
CREATE OR REPLACE FUNCTION public.preregistry_refuse_change() RETURNS trigger
LANGUAGE plpgsql SET search_path = {SEARCH_PATH} AS $$
BEGIN
    RAISE EXCEPTION 'preregistry: % on % is refused: rows of this table are append-only',
        TG_OP, TG_TABLE_NAME;
END
$$;

-- Refuses INSERT, UPDATE and DELETE of a row that belongs to a version that is no longer a
-- draft. TG_ARGV[0] names the column holding the version id (read through to_jsonb so that one
-- function serves every table).
CREATE OR REPLACE FUNCTION public.preregistry_guard_frozen() RETURNS trigger
LANGUAGE plpgsql SET search_path = {SEARCH_PATH} AS $$
DECLARE
    version_ids bigint[] := ARRAY[]::bigint[];
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        version_ids := version_ids || (pg_catalog.to_jsonb(OLD) ->> TG_ARGV[0])::bigint;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        version_ids := version_ids || (pg_catalog.to_jsonb(NEW) ->> TG_ARGV[0])::bigint;
    END IF;
    IF EXISTS (
        SELECT 1 FROM public.protocols_protocolversion
        WHERE id = ANY(version_ids) AND state <> 'draft'
    ) THEN
        RAISE EXCEPTION 'preregistry: % on % is refused: the protocol version is frozen',
            TG_OP, TG_TABLE_NAME;
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END
$$;
"""


def _on_postgresql(sql: str):
    def forward(apps, schema_editor):
        if sql.strip() and schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql, params=None)

    return forward


def _operation(forward_sql: str, reverse_sql: str) -> migrations.RunPython:
    return migrations.RunPython(_on_postgresql(forward_sql), _on_postgresql(reverse_sql))


def install_guard_functions(*, reversible_drop: bool = True) -> migrations.RunPython:
    """Create (or replace) the trigger functions the guards below call.

    ``reversible_drop`` False: reversing leaves them in place (a later migration that only
    replaces their text).
    """
    if not reversible_drop:
        return _operation(_FUNCTIONS, "")
    return _operation(
        _FUNCTIONS,
        "DROP FUNCTION IF EXISTS preregistry_guard_frozen(); "
        "DROP FUNCTION IF EXISTS preregistry_refuse_change();",
    )


def append_only(table: str) -> migrations.RunPython:
    """Refuse UPDATE, DELETE and TRUNCATE on ``table``; INSERT stays allowed."""
    return _operation(
        f"""
        CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table}
            FOR EACH ROW EXECUTE FUNCTION preregistry_refuse_change();
        CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table}
            FOR EACH STATEMENT EXECUTE FUNCTION preregistry_refuse_change();
        """,
        f"""
        DROP TRIGGER IF EXISTS {table}_append_only ON {table};
        DROP TRIGGER IF EXISTS {table}_no_truncate ON {table};
        """,
    )


def frozen_with_version(table: str, column: str = "version_id") -> migrations.RunPython:
    """Refuse any write to a row of ``table`` whose version (``column``) is not a draft.

    TRUNCATE of the table is refused outright: it cannot be checked row by row.
    """
    return _operation(
        f"""
        CREATE TRIGGER {table}_frozen_guard BEFORE INSERT OR UPDATE OR DELETE ON {table}
            FOR EACH ROW EXECUTE FUNCTION preregistry_guard_frozen('{column}');
        CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table}
            FOR EACH STATEMENT EXECUTE FUNCTION preregistry_refuse_change();
        """,
        f"""
        DROP TRIGGER IF EXISTS {table}_frozen_guard ON {table};
        DROP TRIGGER IF EXISTS {table}_no_truncate ON {table};
        """,
    )


def custom_guard(forward_sql: str, reverse_sql: str) -> migrations.RunPython:
    """A guard of its own (a trigger function and its triggers), run only on PostgreSQL.

    For rules the two guards above cannot say, e.g. "these columns are written once".
    """
    return _operation(forward_sql, reverse_sql)


_KEY_EXISTS = re.compile(r"Key \((?P<columns>[^)]*)\)=\((?P<values>.*)\) already exists\.")


def unique_violation_message(error: BaseException) -> str | None:
    """What to answer (409) when a write lost a race on a unique index, else None.

    Two requests that write the same key at once (a double submit, two people choosing one
    code) both pass the services' uniqueness checks; the later INSERT then waits on the index
    and fails with SQLSTATE 23505. The message names the columns and, unless one of them is a
    database id (which tells a user nothing and a reviewer too much), the values.
    """
    cause = error.__cause__ or error.__context__
    if getattr(cause, "sqlstate", None) != "23505":
        return None
    detail = getattr(getattr(cause, "diag", None), "message_detail", None) or ""
    found = _KEY_EXISTS.fullmatch(detail.strip())
    if found is None:
        what = "The same record"
    elif any(c.strip().endswith("_id") for c in found["columns"].split(",")):
        what = f"A record with the same {found['columns']}"
    else:
        what = f"{found['columns']} {found['values']!r}"
    return (
        f"{what} was saved by another request a moment ago, so nothing of this one was "
        "saved; reload to see it."
    )


def is_guard_refusal(error: BaseException) -> bool:
    """Whether a database error is one of these guards refusing a write.

    The runtime role holds no UPDATE, DELETE or TRUNCATE on append-only tables
    (``apps.core.dbroles``), so there the refusal is PostgreSQL's "permission denied"
    (SQLSTATE 42501) before any trigger runs; it counts as the same refusal.
    """
    if "preregistry:" in str(error):
        return True
    cause = error.__cause__ or error.__context__
    return getattr(cause, "sqlstate", None) == "42501"


def guarded_function_sql(name: str, body: str) -> str:
    """``CREATE OR REPLACE FUNCTION public.<name>() RETURNS trigger`` in PL/pgSQL with the fixed
    search path (``SEARCH_PATH``); ``body`` is everything from ``DECLARE`` or ``BEGIN`` to
    ``END``. Every relation ``body`` names must carry its schema (``public.…``)."""
    return (
        f"CREATE OR REPLACE FUNCTION public.{name}() RETURNS trigger\n"
        f"LANGUAGE plpgsql SET search_path = {SEARCH_PATH} AS $$\n{body.strip()}\n$$;\n"
    )
