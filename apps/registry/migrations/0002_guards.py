"""The registry's database guards (PostgreSQL only; see apps/core/dbguards.py).

"Public once published" (BRIEF invariant 6) is a property of the database: a publication row is
never deleted; once public it never changes; while under embargo the only change allowed is to
become public (``public_since`` set, nothing else touched). Published runs are append-only.
"""

from django.db import migrations

from apps.core.dbguards import append_only, custom_guard, guarded_function_sql

# With the fixed search path every guard function has (apps.core.dbguards.SEARCH_PATH), so no
# temporary object can shadow what it names (issue 33).
_GUARD = (
    guarded_function_sql(
        "preregistry_guard_publication",
        r"""
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'preregistry: DELETE on % is refused: a publication is never undone',
            TG_TABLE_NAME;
    END IF;
    IF OLD.public_since IS NOT NULL THEN
        RAISE EXCEPTION 'preregistry: UPDATE on % is refused: a public version is never '
            'private again', TG_TABLE_NAME;
    END IF;
    IF NEW.public_since IS NULL
        OR NEW.version_id IS DISTINCT FROM OLD.version_id
        OR NEW.published_by_id IS DISTINCT FROM OLD.published_by_id
        OR NEW.published_at IS DISTINCT FROM OLD.published_at
        OR NEW.embargo_until IS DISTINCT FROM OLD.embargo_until
        OR NEW.authors IS DISTINCT FROM OLD.authors THEN
        RAISE EXCEPTION 'preregistry: UPDATE on % is refused: an embargoed publication may only '
            'become public', TG_TABLE_NAME;
    END IF;
    RETURN NEW;
END
""",
    )
    + """
CREATE TRIGGER registry_publication_guard BEFORE UPDATE OR DELETE ON public.registry_publication
    FOR EACH ROW EXECUTE FUNCTION public.preregistry_guard_publication();
CREATE TRIGGER registry_publication_no_truncate BEFORE TRUNCATE ON public.registry_publication
    FOR EACH STATEMENT EXECUTE FUNCTION public.preregistry_refuse_change();
"""
)

_UNGUARD = r"""
DROP TRIGGER IF EXISTS registry_publication_guard ON registry_publication;
DROP TRIGGER IF EXISTS registry_publication_no_truncate ON registry_publication;
DROP FUNCTION IF EXISTS preregistry_guard_publication();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0001_initial"),
        ("core", "0001_guard_functions"),
    ]

    operations = [
        custom_guard(_GUARD, _UNGUARD),
        append_only("registry_runpublication"),
    ]
