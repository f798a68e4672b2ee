"""Guard functions that cannot be shadowed, and a version's state and hash written once (#33).

Every trigger function of ours is replaced by one with a fixed ``search_path`` and
schema-qualified names (``apps.core.dbguards.SEARCH_PATH`` says why): the two shared ones
(``install_guard_functions``, whose text now carries the fix), the analysis run's guard
(analysis 0002) and the protocol code's guard (deviations 0004), unchanged otherwise.

A new trigger on ``protocols_protocolversion`` refuses any change of ``state`` once it is no longer
``draft`` and of ``sha256`` once set. It reads no other table, so nothing can shadow it; the
frozen-version guard already refuses such an update, but only while the version table it reads
is the real one.
"""

from django.db import migrations

from apps.core.dbguards import custom_guard, guarded_function_sql, install_guard_functions

_ANALYSIS_RUN = guarded_function_sql(
    "preregistry_guard_analysis_run",
    r"""
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'preregistry: DELETE on % is refused: analysis runs are kept',
            TG_TABLE_NAME;
    END IF;
    IF OLD.state IN ('succeeded', 'failed') THEN
        RAISE EXCEPTION 'preregistry: UPDATE on % is refused: analysis run % has finished',
            TG_TABLE_NAME, OLD.id;
    END IF;
    IF OLD.result_sha256 IS NOT NULL
        AND NEW.result_sha256 IS DISTINCT FROM OLD.result_sha256 THEN
        RAISE EXCEPTION 'preregistry: UPDATE on % is refused: a result hash is written once',
            TG_TABLE_NAME;
    END IF;
    IF OLD.input_sha256 IS NOT NULL
        AND NEW.input_sha256 IS DISTINCT FROM OLD.input_sha256 THEN
        RAISE EXCEPTION 'preregistry: UPDATE on % is refused: an input hash is written once',
            TG_TABLE_NAME;
    END IF;
    IF NEW.version_id IS DISTINCT FROM OLD.version_id
        OR NEW.number IS DISTINCT FROM OLD.number
        OR NEW.kind IS DISTINCT FROM OLD.kind
        OR NEW.protocol_sha256 IS DISTINCT FROM OLD.protocol_sha256
        OR NEW.parameters IS DISTINCT FROM OLD.parameters
        OR NEW.seed IS DISTINCT FROM OLD.seed
        OR NEW.requested_by_id IS DISTINCT FROM OLD.requested_by_id
        OR NEW.rerun_of_id IS DISTINCT FROM OLD.rerun_of_id
        OR NEW.created_at IS DISTINCT FROM OLD.created_at THEN
        RAISE EXCEPTION 'preregistry: UPDATE on % is refused: what a run was asked to do '
            'never changes', TG_TABLE_NAME;
    END IF;
    RETURN NEW;
END
""",
)

_PROTOCOL_CODE = guarded_function_sql(
    "preregistry_guard_protocol_code",
    r"""
DECLARE
    frozen boolean := EXISTS (SELECT 1 FROM public.protocols_protocolversion
                              WHERE protocol_id = OLD.id AND state <> 'draft');
BEGIN
    IF NEW.code IS DISTINCT FROM OLD.code AND (
        frozen OR EXISTS (SELECT 1 FROM public.deviations_logentry WHERE protocol_id = OLD.id)
    ) THEN
        RAISE EXCEPTION 'preregistry: the code of protocol % cannot change: it has a frozen '
            'version or a deviation log', OLD.code;
    END IF;
    -- The title and the plan template are in every frozen version's canonical document.
    IF frozen AND (NEW.title IS DISTINCT FROM OLD.title
                   OR NEW.template IS DISTINCT FROM OLD.template) THEN
        RAISE EXCEPTION 'preregistry: the title and template of protocol % cannot change: '
            'they are part of its frozen versions', OLD.code;
    END IF;
    RETURN NEW;
END
""",
)

_VERSION_IDENTITY = guarded_function_sql(
    "preregistry_guard_version_identity",
    r"""
BEGIN
    IF OLD.state <> 'draft' AND NEW.state IS DISTINCT FROM OLD.state THEN
        RAISE EXCEPTION 'preregistry: UPDATE on % is refused: version % is % and stays so',
            TG_TABLE_NAME, OLD.id, OLD.state;
    END IF;
    IF OLD.sha256 <> '' AND NEW.sha256 IS DISTINCT FROM OLD.sha256 THEN
        RAISE EXCEPTION 'preregistry: UPDATE on % is refused: the hash of version % is '
            'written once', TG_TABLE_NAME, OLD.id;
    END IF;
    RETURN NEW;
END
""",
) + (
    "CREATE TRIGGER protocols_protocolversion_identity_guard BEFORE UPDATE "
    "ON public.protocols_protocolversion "
    "FOR EACH ROW EXECUTE FUNCTION public.preregistry_guard_version_identity();"
)

_UNGUARD_VERSION_IDENTITY = """
DROP TRIGGER IF EXISTS protocols_protocolversion_identity_guard ON protocols_protocolversion;
DROP FUNCTION IF EXISTS preregistry_guard_version_identity();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0001_guard_functions"),
        ("analysis", "0002_guards"),
        ("deviations", "0004_logentry_protocol_code"),
        ("protocols", "0002_guards"),
    ]

    operations = [
        # Reversing leaves the fixed functions in place: they refuse exactly what the old did.
        install_guard_functions(reversible_drop=False),
        custom_guard(_ANALYSIS_RUN + _PROTOCOL_CODE, ""),
        custom_guard(_VERSION_IDENTITY, _UNGUARD_VERSION_IDENTITY),
    ]
