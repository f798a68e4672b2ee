"""The application's database role cannot switch the guards off (issue #18, "Why" 1).

On PostgreSQL the whole suite runs as the runtime role (``tests/dbroles.py``); these tests prove
that this role is neither a superuser nor an owner, that the two bypasses a superuser or owner has
are refused to it, and that ``check_db_role`` and ``/healthz`` tell a safe role from an unsafe one.
"""

import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import DatabaseError, connection, connections, transaction

from apps.core.dbguards import is_guard_refusal
from apps.core.dbroles import owner_connection, protected_tables, role_problems
from tests import dbroles as test_roles
from tests.dbroles import owner_cursor

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def two_roles():
    if not test_roles.two_roles():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true and the tests do not run as a separate runtime role")
        pytest.skip("needs DATABASE_OWNER_URL, or a superuser DATABASE_URL to create the roles")


def _refused(sql: str) -> str:
    with pytest.raises(DatabaseError) as error, transaction.atomic(), connection.cursor() as cur:
        cur.execute(sql)
    return str(error.value)


def _url(user: str) -> str:
    db = connection.settings_dict
    return f"postgres://{user}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_suite_runs_as_a_runtime_role_that_is_neither_superuser_nor_owner(two_roles):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_user, rolsuper, rolcreaterole FROM pg_roles "
            "WHERE rolname = current_user"
        )
        user, superuser, createrole = cursor.fetchone()
        tables = protected_tables(cursor)
        cursor.execute(
            "SELECT count(*) FROM pg_class WHERE oid = ANY(%s) "
            "AND pg_has_role(current_user, relowner, 'MEMBER')",
            [[oid for oid, *_ in tables]],
        )
        (owned,) = cursor.fetchone()
    assert user == settings.DATABASE_RUNTIME_ROLE
    assert (superuser, createrole, owned) == (False, False, 0)
    assert len(tables) > 20  # the log, the history tables, every frozen-with-version table …
    assert role_problems(connection) == []


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_runtime_role_runs_without_jit(two_roles):
    # provision sets it on the role: a JIT compilation on each execution of a short statement
    # once a large table's estimate crosses jit_above_cost (docs/performance.md).
    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone()[0] == "off"


@pytest.mark.postgres
@pytest.mark.django_db
def test_session_replication_role_replica_is_refused(two_roles):
    message = _refused("SET session_replication_role = replica")
    assert "permission denied to set parameter" in message


@pytest.mark.postgres
@pytest.mark.django_db
def test_disabling_the_guard_triggers_is_refused_on_every_protected_table(two_roles):
    with connection.cursor() as cursor:
        tables = [name for _, name, *_ in protected_tables(cursor)]
    for table in tables:
        assert "must be owner" in _refused(f"ALTER TABLE {table} DISABLE TRIGGER USER"), table
        assert "must be owner" in _refused(f"ALTER TABLE {table} DISABLE TRIGGER ALL"), table


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_runtime_role_holds_no_update_delete_or_truncate_on_append_only_tables(two_roles):
    with connection.cursor() as cursor:
        tables = protected_tables(cursor)
        append_only = [name for _, name, no_update, _ in tables if no_update]
        assert "deviations_logentry" in append_only
        assert "protocols_historicalprotocolversion" in append_only
        for _, name, no_update, no_delete in tables:
            cursor.execute(
                "SELECT has_table_privilege(%s, 'UPDATE'), has_table_privilege(%s, 'DELETE'), "
                "has_table_privilege(%s, 'TRUNCATE'), has_table_privilege(%s, 'INSERT')",
                [name] * 4,
            )
            update, delete, truncate, insert = cursor.fetchone()
            assert not truncate, name
            assert insert, name
            if no_update:
                assert not update, name
            if no_delete:
                assert not delete, name
    assert "permission denied" in _refused("DELETE FROM deviations_logentry")


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_privilege_refusal_counts_as_a_guard_refusal_for_the_api():
    with pytest.raises(DatabaseError) as error, transaction.atomic(), connection.cursor() as cur:
        cur.execute("TRUNCATE deviations_logentry")
    assert is_guard_refusal(error.value)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_even_the_owner_is_refused_by_the_triggers_until_it_switches_them_off(two_roles):
    with owner_cursor() as cursor:
        tables = [name for _, name, *_ in protected_tables(cursor)]
    for table in tables:
        with pytest.raises(DatabaseError, match="preregistry: TRUNCATE"), owner_cursor() as cur:
            cur.execute(f"TRUNCATE {table} CASCADE")


@pytest.mark.postgres
@pytest.mark.django_db
def test_check_db_role_accepts_the_runtime_role_and_names_what_is_wrong_with_the_owner(two_roles):
    out = StringIO()
    call_command("check_db_role", stdout=out)
    assert (
        out.getvalue().strip() == f"database role {settings.DATABASE_RUNTIME_ROLE}: least privilege"
    )

    owner = owner_connection(connection)
    try:
        problems = role_problems(owner)
    finally:
        owner.close()
    assert any("owns" in problem and "DISABLE TRIGGER" in problem for problem in problems)


@pytest.mark.postgres
@pytest.mark.django_db
def test_manage_py_check_db_role_exits_non_zero_for_the_owner(two_roles):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "DATABASE_URL": _url(settings.DATABASE_OWNER["USER"]),
    }
    command = [sys.executable, str(ROOT / "manage.py"), "check_db_role"]
    owner = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert owner.returncode == 1
    assert "owns (or is a member of the owner of)" in owner.stdout


@pytest.mark.postgres
@pytest.mark.django_db
def test_check_db_role_names_a_superuser(two_roles):
    superuser = test_roles.superuser_name()
    if not superuser:
        pytest.skip("no superuser is known to this run (DATABASE_OWNER_URL was given)")
    wrapper = connections["default"]
    as_superuser = type(wrapper)({**wrapper.settings_dict, "USER": superuser}, alias="superuser")
    try:
        problems = role_problems(as_superuser)
    finally:
        as_superuser.close()
    assert problems[0].startswith(f"the role {superuser} is a superuser")


@pytest.mark.django_db
def test_check_db_role_on_sqlite_says_there_are_no_roles():
    if connection.vendor == "postgresql":
        pytest.skip("the SQLite answer")
    out = StringIO()
    call_command("check_db_role", stdout=out)
    assert "no roles" in out.getvalue()


@pytest.mark.postgres
@pytest.mark.django_db
def test_healthz_reports_the_role_and_is_503_for_an_unsafe_role_when_enforced(
    client, settings, two_roles
):
    settings.REDIS_URL = ""
    settings.DATABASE_ROLE_ENFORCED = True
    body = client.get("/healthz").json()
    assert body["database"]["role"] == {"least_privilege": True, "problems": []}
    from unittest import mock

    unsafe = ["the role x is a superuser: it can SET session_replication_role = replica"]
    with mock.patch("apps.core.views.role_problems", return_value=unsafe):
        response = client.get("/healthz")
        assert response.status_code == 503
        assert response.json()["database"]["role"]["problems"] == unsafe
        settings.DATABASE_ROLE_ENFORCED = False
        assert client.get("/healthz").status_code == 200
