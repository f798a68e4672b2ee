"""Guards that a temporary table cannot shadow (issue #33, "Why" 1 and Deliver 1).

The hostile test, as the runtime role: ``CREATE TEMP TABLE protocols_protocolversion(…)``, then
``UPDATE public.protocols_analysisparameter SET value = '0.45'`` on a frozen version gave
``UPDATE 1``: the guard read the (empty) temporary table, as ``pg_temp`` comes first in the
caller's search path. Now the runtime role may not create a temporary table at all, and even a
role that may (granted here on purpose) cannot shadow what the guards read, because every guard
function has a fixed search path and schema-qualified names.
"""

from collections.abc import Iterator

import pytest
from django.db import DatabaseError, connection, transaction

from apps.core.dbguards import SEARCH_PATH
from apps.core.dbroles import role_problems
from apps.protocols.models import AnalysisParameter, ProtocolVersion
from tests import dbroles as test_roles
from tests.dbroles import assert_sql_refused, owner_cursor
from tests.factories import AnalysisParameterFactory, ProtocolVersionFactory

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

FROZEN_GUARD = "protocols_protocolversion_frozen_guard"
SHADOW = "CREATE TEMP TABLE protocols_protocolversion(id bigint, state text, protocol_id bigint)"


@pytest.fixture
def two_roles():
    if not test_roles.two_roles():
        pytest.skip("needs the runtime role distinct from the owner (tests/dbroles.py)")


@pytest.fixture
def frozen_parameter() -> AnalysisParameter:
    version = ProtocolVersionFactory()
    parameter = AnalysisParameterFactory(version=version, name="epsilon", value="0.10")
    ProtocolVersion.objects.filter(pk=version.pk).update(state="frozen", sha256="a" * 64)
    return parameter


@pytest.fixture
def temporary_granted(two_roles) -> Iterator[None]:
    """The runtime role granted TEMPORARY, as on a database provisioned before this fix."""
    database, role = connection.settings_dict["NAME"], connection.settings_dict["USER"]
    with owner_cursor() as cursor:
        cursor.execute(f'GRANT TEMPORARY ON DATABASE "{database}" TO "{role}"')
    try:
        yield
    finally:
        with owner_cursor() as cursor:
            cursor.execute(f'REVOKE TEMPORARY ON DATABASE "{database}" FROM "{role}"')


def test_the_runtime_role_may_not_create_a_temporary_table(two_roles):
    with pytest.raises(DatabaseError) as error, transaction.atomic(), connection.cursor() as cur:
        cur.execute(SHADOW)
    assert "permission denied to create temporary tables" in str(error.value)
    with connection.cursor() as cursor:
        cursor.execute("SELECT has_database_privilege(current_database(), 'TEMPORARY')")
        assert cursor.fetchone() == (False,)


def test_every_guard_function_has_the_fixed_search_path():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT proname, proconfig FROM pg_proc WHERE proname LIKE 'preregistry\\_%%'"
        )
        functions = dict(cursor.fetchall())
    assert {
        "preregistry_refuse_change",
        "preregistry_guard_frozen",
        "preregistry_guard_analysis_run",
        "preregistry_guard_protocol_code",
        "preregistry_guard_version_identity",
    } <= set(functions)
    for name, config in functions.items():
        assert config == [f"search_path={SEARCH_PATH}"], name


@pytest.mark.django_db(transaction=True)  # the grant must precede the runtime's transaction
def test_a_shadowing_temporary_table_does_not_switch_the_frozen_guard_off(
    frozen_parameter, temporary_granted
):
    with connection.cursor() as cursor:
        cursor.execute(SHADOW)  # allowed now: the role was granted TEMPORARY on purpose
    try:
        _shadowed_writes_are_refused(frozen_parameter)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE pg_temp.protocols_protocolversion")


def _shadowed_writes_are_refused(frozen_parameter: AnalysisParameter) -> None:
    version = frozen_parameter.version
    # check_db_role names the privilege while it is held
    assert any("TEMPORARY" in problem for problem in role_problems(connection))
    assert_sql_refused(
        "UPDATE public.protocols_analysisparameter SET value = '0.45' WHERE id = %s",
        [frozen_parameter.pk],
    )
    assert_sql_refused(
        "UPDATE public.protocols_protocolversion SET state = 'draft' WHERE id = %s", [version.pk]
    )
    assert_sql_refused(
        "UPDATE public.protocols_protocol SET title = 'renamed' WHERE id = %s",
        [version.protocol_id],
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT value FROM public.protocols_analysisparameter WHERE id = %s",
            [frozen_parameter.pk],
        )
        assert cursor.fetchone() == ("0.10",)


@pytest.mark.django_db(transaction=True)
def test_a_frozen_versions_state_and_hash_are_refused_even_to_the_owner(
    frozen_parameter, two_roles
):
    version_id = frozen_parameter.version_id
    with owner_cursor() as cursor:
        # The owner switches off the guard that reads the version table (as the hostile test's
        # shadow did); the identity guard reads nothing and still refuses.
        cursor.execute(f"ALTER TABLE protocols_protocolversion DISABLE TRIGGER {FROZEN_GUARD}")
        for assignment in ("state = 'draft'", f"sha256 = '{'b' * 64}'"):
            cursor.execute("SAVEPOINT s")
            with pytest.raises(Exception, match="preregistry: UPDATE"):
                cursor.execute(
                    f"UPDATE protocols_protocolversion SET {assignment} WHERE id = %s",
                    [version_id],
                )
            cursor.execute("ROLLBACK TO SAVEPOINT s")
        cursor.execute(f"ALTER TABLE protocols_protocolversion ENABLE TRIGGER {FROZEN_GUARD}")


@pytest.mark.django_db(transaction=True)
def test_check_db_role_names_a_guard_function_without_the_fixed_search_path(
    two_roles, temporary_granted
):
    with owner_cursor() as cursor:
        cursor.execute("ALTER FUNCTION preregistry_guard_frozen() RESET search_path")
    try:
        problems = role_problems(connection)
    finally:
        with owner_cursor() as cursor:
            cursor.execute(
                f"ALTER FUNCTION preregistry_guard_frozen() SET search_path = {SEARCH_PATH}"
            )
    assert any("preregistry_guard_frozen" in p and "search_path" in p for p in problems)
    assert role_problems(connection) == [p for p in problems if "TEMPORARY" in p]
